"""What the model leaves out, and the settings a sweep ran with: the report's sections generated
from the runs' configuration and the latest calibration against real clients (docs/lab.md
"The report", "Calibration against real clients").

- :func:`settings_table`: every setting of the runs (the ``settings_json`` column, the runs'
  effective settings under Kafka's config names), per protocol, with every value the runs used;
- :func:`model_limits`: the section's items, each filled from the configuration of the runs'
  cells (their scenarios rebuilt as ``lab.runs.build_scenario`` builds them: workload,
  network, timers) and from :func:`load_calibration`;
- :func:`load_calibration` / :func:`save_calibration`: the latest calibration results, data the
  package ships (``lab/data/calibration.json``, written by ``groupcoord lab calibrate --save``).

Nothing here holds a number of the model: a figure the page prints comes from a run's
configuration or from the calibration file.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CALIBRATION_FILE = Path(__file__).with_name("data") / "calibration.json"
#: The calibration against Apache Kafka's Java client (``lab calibrate --client java --save``):
#: its own file beside librdkafka's, its rows read with them (each tagged ``client: java``).
CALIBRATION_JAVA_FILE = CALIBRATION_FILE.with_name("calibration-java.json")


# --------------------------------------------------------------------------- calibration


def load_calibration(path: Path | None = None) -> dict[str, Any] | None:
    """The latest calibration results (None when the file is missing or unreadable). The
    package's (no ``path``) come with the Java client's (:data:`CALIBRATION_JAVA_FILE`, when
    present: :func:`with_java_rows`)."""
    data = _read_calibration(path or CALIBRATION_FILE)
    if path is None and data is not None and CALIBRATION_JAVA_FILE.exists():
        java = _read_calibration(CALIBRATION_JAVA_FILE)
        if java is not None:
            data = with_java_rows(data, java)
    return data


def _read_calibration(p: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        log.warning("calibration results %s: %s", p, e)
        return None
    return data if isinstance(data, dict) else None


def with_java_rows(cal: Mapping[str, Any], java: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka's calibration with the Java client's rows after its own, each tagged
    ``client: java`` and with the metrics it was checked on (``checked``: its own, else its
    file's), the Java client's description as ``setup.clients_java`` and the later of
    the two dates as the results' date."""
    out = dict(cal)
    # a Java row keeps the metrics it was checked on: its own list, else its file's
    checked = list(java.get("checked") or _FIRST_CHECKED)
    out["rows"] = [*(cal.get("rows") or []),
                   *({"checked": checked, **r, "client": "java"} for r in java.get("rows") or [])]
    out["setup"] = {**(cal.get("setup") or {}),
                    "clients_java": dict((java.get("setup") or {}).get("clients") or {})}
    out["measured"] = max(str(cal.get("measured") or ""), str(java.get("measured") or ""))
    return out


def client_label(r: Mapping[str, Any], setup: Mapping[str, Any]) -> str:
    """The client a row measured, where the results hold more than one: "Java client" for the
    Java client's rows, "librdkafka" for the others; "" when librdkafka's are all there is."""
    if r.get("client") == "java":
        return "Java client"
    return "librdkafka" if setup.get("clients_java") else ""


def save_calibration(data: Mapping[str, Any], path: Path | None = None) -> Path:
    """Write calibration results where :func:`load_calibration` reads them."""
    p = path or CALIBRATION_FILE
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return p


def calibration_rows(results: Sequence[Any], scenario: str, condition: str = "",
                     run: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows :func:`save_calibration` stores for one ``lab calibrate`` command: per
    protocol its summary over the windows (``lab.calibrate.ProtocolResult.summary``), each
    metric simulated (its paired seeds), measured, and simulated over all seeds; the settings
    the protocol ran with (Kafka's names) and ``run`` (the command's members, wire runs,
    seeds, workload, wall time, load: what the page prints beside the row)."""
    from groupcoord.lab.calibrate import CHECKED, summarize

    out = []
    for r in results:
        if r.error or not r.comparisons:
            continue
        kinds = list(dict.fromkeys(c.disturbance for c in r.comparisons))
        # a scenario of different disturbances (a crash, then a join): a row per kind, each
        # window checked as itself, not averaged with another kind's
        parts = [(None, r.summary)] if len(kinds) == 1 else [
            (k, summarize(r.protocol, [c for c in r.comparisons if c.disturbance == k]))
            for k in kinds]
        for window, s in parts:
            if s is not None:
                out.append({**_row(r, s, scenario, condition, run, window),
                            "checked": list(CHECKED)})
    return out


def _row(r: Any, s: Any, scenario: str, condition: str, run: Mapping[str, Any] | None,
         window: str | None) -> dict[str, Any]:
    """One saved row: the summary ``s`` of ``r``'s windows (of kind ``window``, or all)."""
    metrics = {}
    for row in s.rows:
        d = {"simulated": row["simulated"], "measured": row["measured"]}
        if row.get("simulated_all_seeds") not in (None, row["simulated"]):
            d["simulated_all_seeds"] = row["simulated_all_seeds"]
        metrics[row["metric"]] = d
    row_out: dict[str, Any] = {"scenario": scenario, "protocol": r.protocol,
                               "condition": condition, **dict(run or {})}
    if window is not None:
        row_out["window"] = window
    settings = getattr(r, "settings", None)
    if settings:
        row_out["settings"] = dict(settings)
    row_out.update({"disturbance": s.disturbance, "metrics": metrics,
                    "within_2x": bool(s.checked_ok)})
    wire_runs = list(getattr(r, "wire_runs", []) or [])
    sim_runs = list(getattr(r, "sim_runs", []) or [])[:len(wire_runs)]
    if wire_runs:
        row_out["per_run"] = {
            m: {"measured": [_run_value(w, m, window) for w in wire_runs],
                "simulated": [_run_value(w, m, window) for w in sim_runs]}
            for m in _PER_RUN}
    return row_out


#: The metrics a row keeps per run (each wire run and its paired seed), as the summary
#: aggregates a run's windows: the mean, the lag peak's maximum.
_PER_RUN = ("time_to_converge_ms", "converge_after_ms", "lag_peak", "lag_record_s",
            "stall_ms", "records_reprocessed")


def _run_value(windows: Sequence[Mapping[str, Any]], metric: str,
               kind: str | None = None) -> float | None:
    """One run's value of ``metric`` over its disturbance windows (the initial join left
    out; ``kind``: those of that disturbance only), as ``lab.calibrate.summarize``
    aggregates them; None when a window lacks it."""
    vals: list[float] = []
    for w in windows:
        if w.get("disturbance") == "initial-join" or kind not in (None, w.get("disturbance")):
            continue
        if metric == "converge_after_ms":
            ttc = w.get("time_to_converge_ms")
            v = None if ttc is None else max(
                float(ttc) - (float(w["settled_ms"]) - float(w["at_ms"])), 0.0)
        else:
            v = None if w.get(metric) is None else float(w[metric])
        if v is None:
            return None
        vals.append(v)
    if not vals:
        return None
    return round(max(vals) if metric == "lag_peak" else sum(vals) / len(vals), 1)


def merged_calibration(old: Mapping[str, Any] | None, rows: Sequence[Mapping[str, Any]],
                       setup: Mapping[str, Any], checked: Sequence[str], measured: str
                       ) -> dict[str, Any]:
    """The calibration results with ``rows`` (dated ``measured``) in place of the old rows of
    the same scenario, protocol and condition (the other rows kept: another scenario or
    protocol measured earlier), the file dated ``measured``. The file keeps its order: a
    measured row takes the place of the first old row it replaces, a row new to the file
    goes after the others, so that ``--save`` changes only the rows it measured."""
    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        return r.get("scenario"), r.get("protocol"), r.get("condition", "")

    fresh: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for n in rows:
        fresh.setdefault(key(n), []).append({**n, "measured": n.get("measured", measured)})
    # (a scenario's rows are replaced together: a row per disturbance kind or one)
    merged: list[Any] = []
    for r in (old or {}).get("rows", []):
        k = key(r)
        if k not in fresh:
            merged.append(r)
        elif fresh[k]:
            merged += fresh[k]
            fresh[k] = []
    merged += [n for ns in fresh.values() for n in ns]
    out = dict(old or {})
    out.update({"measured": measured, "setup": {**(old or {}).get("setup", {}), **setup},
                "checked": list(checked), "rows": merged,
                "source": "groupcoord lab calibrate --save"})
    out.setdefault("tolerance", "within 2x, or both below a floor")
    return out


#: The floors below which two values count as equal (``lab.calibrate.FLOORS``: the layer
#: order keeps limits from importing the calibration's harness; a test checks they agree).
_FLOORS: dict[str, float] = {"time_to_converge_ms": 500, "converge_after_ms": 500,
                             "lag_peak": 50, "lag_record_s": 50, "stall_ms": 250,
                             "records_reprocessed": 50}
_CAL_NAMES = {"converge_after_ms": ("time to converge after the disturbance", "ms"),
              "time_to_converge_ms": ("time to converge", "ms"),
              "lag_peak": ("lag peak", "records"), "lag_record_s": ("lag", "record·s"),
              "stall_ms": ("stall", "ms"), "records_reprocessed": ("records processed twice",
                                                                   "")}
#: The metrics checked before stall and records processed twice were (rows saved without
#: their own ``checked`` list were checked on these only).
_FIRST_CHECKED = ("time_to_converge_ms", "converge_after_ms", "lag_peak", "lag_record_s")
#: The metrics a row reports beside the checked ones (when either side is not 0).
_REPORTED_NAMES = {"records_processed": ("records processed", ""),
                   "stall_ms": ("stall", "ms"), "paused_partition_s": ("paused", "partition·s"),
                   "records_reprocessed": ("records processed twice", ""),
                   "task_restarts": ("task restarts", ""),
                   "resources_moved": ("moved", "")}
#: The settings a row names (Kafka's names, shortened on the page), in this order.
_ROW_SETTINGS = (("heartbeat.interval.ms", "heartbeat"),
                 ("group.consumer.heartbeat.interval.ms", "heartbeat"),
                 ("session.timeout.ms", "session"),
                 ("group.consumer.session.timeout.ms", "session"),
                 ("max.poll.interval.ms", "max.poll.interval"),
                 ("rebalance.timeout.ms", "rebalance timeout"),
                 ("group.consumer.assignment.interval.ms", "assignment interval"),
                 ("scheduled.rebalance.max.delay.ms", "scheduled.rebalance.max.delay"),
                 ("metadata.max.age.ms", "metadata.max.age"))


def _n(v: Any) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    return f"{int(v):,}"


def _ms(v: Any) -> str:
    """A setting in ms as a person reads it: 3 s, 45 s, 5 min, 500 ms."""
    v = int(v)
    if v >= 60_000 and v % 60_000 == 0:
        return f"{v // 60_000} min"
    if v >= 1_000 and v % 1_000 == 0:
        return f"{v // 1_000} s"
    return f"{v:,} ms"


def calibration_ratio(simulated: Any, measured: Any) -> float | None:
    """Simulated / measured (None when either is missing or the measured value is 0)."""
    if simulated is None or measured is None or float(measured) == 0:
        return None
    return float(simulated) / float(measured)


def _row_misses(r: Mapping[str, Any], checked: Sequence[str]) -> list[str]:
    """The checked metrics of a row outside 2x (as its ``within_2x`` says: floors included)."""
    out = []
    for c in checked:
        v = (r.get("metrics") or {}).get(c) or {}
        s, m = v.get("simulated"), v.get("measured")
        if s is None or m is None:
            continue
        lo, hi = sorted((float(s), float(m)))
        if hi <= (r.get("floors") or _FLOORS).get(c, 0.0):
            continue
        if lo == 0 or hi / lo > 2:
            out.append(c)
    return out


def row_checked(r: Mapping[str, Any], checked: Sequence[str] = ()) -> list[str]:
    """The metrics a saved row was checked on: its own list, else the file's ``checked``
    (a row saved before rows carried one: the first four, whatever the file says now)."""
    own = r.get("checked")
    if isinstance(own, list) and own:
        return [str(c) for c in own]
    return [c for c in checked if c in _FIRST_CHECKED] or list(_FIRST_CHECKED)


def calibration_row_text(r: Mapping[str, Any], checked: Sequence[str],
                         setup: Mapping[str, Any] | None = None) -> str:
    """One calibration row as the page prints it, from the data: the verdict first
    (``Within 2x`` / ``Outside 2x``), the cell (scenario, members, protocol), the settings it
    ran with, the wire runs and load, then every checked metric simulated / measured with its
    ratio, and a miss's explanation (``why``) when the data has one. A row checks the
    metrics of its own ``checked`` list (saved with it), else ``checked``."""
    setup = setup or {}
    checked = row_checked(r, checked)
    members = r.get("members", setup.get("members"))
    settings = r.get("settings") or {}
    shown = [f"{short} {_ms(settings[k])}" for k, short in _ROW_SETTINGS if k in settings]
    where = f"{r.get('scenario')}"
    if members:
        where += f" at {members} members"
    where += f", {r.get('protocol')}"
    if client_label(r, setup):
        where += f", {client_label(r, setup)}"
    if r.get("condition"):
        where += f", {r['condition']}"
    if r.get("window"):
        where += f", its {r['window']} window"
    if r.get("note"):
        where += f" ({r['note']})"
    if shown:
        where += " (" + ", ".join(shown) + ")"
    runs = r.get("wire_runs", setup.get("wire_runs"))
    load = r.get("load")
    how = []
    if runs:
        how.append(f"{runs} wire run{'s' if int(runs) != 1 else ''}")
    if isinstance(load, list) and load:
        how.append("1-minute load " + " to ".join(f"{float(x):g}" for x in load))
    if r.get("measured"):
        how.append(str(r["measured"]))
    cells = []
    metrics = r.get("metrics") or {}
    for c in checked:
        v = metrics.get(c) or {}
        s, m = v.get("simulated"), v.get("measured")
        if s is None or m is None:
            continue
        if c == "converge_after_ms" and v == metrics.get("time_to_converge_ms"):
            continue  # a disturbance without duration: the same as the time to converge
        name, unit = _CAL_NAMES.get(c, (c, ""))
        if float(s) == 0 and float(m) == 0:
            cells.append(f"{name} 0 / 0 {unit}".rstrip() + " (both 0)")
            continue
        ratio = calibration_ratio(s, m)
        floor = (r.get("floors") or _FLOORS).get(c)
        below = floor is not None and max(float(s), float(m)) <= floor
        cells.append(f"{name} {_n(s)} / {_n(m)} {unit}".rstrip()
                     + (f" ({ratio:.2f}" if ratio is not None else " (measured 0")
                     + (f", both below the floor of {_n(floor)})" if below else ")"))
    verdict = "Within 2x" if r.get("within_2x") else "Outside 2x"
    misses = [] if r.get("within_2x") else _row_misses(r, checked)
    if metrics.get("converge_after_ms") == metrics.get("time_to_converge_ms"):
        misses = [c for c in misses if c != "converge_after_ms"]  # said once, as above
    text = (f"{verdict}: {where}" + (f" [{'; '.join(how)}]" if how else "") + ": "
            + "; ".join(cells))
    if misses:
        text += " - outside 2x on " + ", ".join(_CAL_NAMES.get(c, (c, ""))[0] for c in misses)
    if r.get("why"):
        text += f" ({r['why']})"
    if str(r.get("disturbance") or "").startswith("add-partitions"):
        text += f" ({WIRE_GROWTH_PRODUCER})"
    reported = []
    for c, (name, unit) in _REPORTED_NAMES.items():
        if c in checked:
            continue
        v = metrics.get(c) or {}
        s, m = v.get("simulated"), v.get("measured")
        if s is None or m is None or (float(s) == 0 and float(m) == 0):
            continue
        reported.append(f"{name} {_n(s)} / {_n(m)} {unit}".rstrip())
    if reported:
        text += "; reported, not checked: " + ", ".join(reported)
    spread = []
    for c in checked:
        runs = (r.get("per_run") or {}).get(c) or {}
        if c == "converge_after_ms" and runs == (r.get("per_run") or {}).get(
                "time_to_converge_ms"):
            continue
        ms = [v for v in runs.get("measured") or [] if v is not None]
        ss = [v for v in runs.get("simulated") or [] if v is not None]
        floor = _FLOORS.get(c, 0.0)
        if len(ms) > 1 and any(max(x) > max(2 * min(x), floor) for x in (ms, ss) if x):
            name, unit = _CAL_NAMES.get(c, (c, ""))
            spread.append(f"{name} run by run {', '.join(_n(v) for v in ms)} {unit} measured, "
                          f"{', '.join(_n(v) for v in ss)} in the paired seeds")
    if spread:
        text += "; the runs are spread: " + "; ".join(spread)
    return text


#: What a growth row of the calibration measured against (``lab.wire._Producer``): said on
#: the row, since the paper's grids model another producer.
WIRE_GROWTH_PRODUCER = (
    "the wire's producer kept its rate a partition: every partition, the new ones too, at the "
    "workload's records/s, so the topic's input grew with its partition count, and the "
    "simulated side models the same producer (growth_rate partition); the paper's grids model "
    "a producer at a fixed topic rate, which this row does not measure: that takes a wire "
    "producer that spreads the topic's rate over the partitions it knows, and the command "
    "this row names re-run with it")

#: The calibration's clients against the client the model follows, said where it is printed
#: when no row measured the Java client.
JAVA_CALIBRATION = (
    "The wire runs use confluent-kafka (librdkafka) consumers, while the model follows the "
    "Java client (kafka-clients), whose behaviour differs where it matters for the tables (a "
    "classic group rejoins on a metadata refresh at any member's under librdkafka, at the "
    "leader's under Java). No row below measures the Java client (groupcoord lab calibrate "
    "--client java does, with kafka-clients built from source on the machine: docs/clients.md).")


def clients_text(rows: Sequence[Mapping[str, Any]], setup: Mapping[str, Any]) -> str:
    """Which clients the rows measured, and where both measured the same scenario and
    protocol, each checked metric simulated / librdkafka / Java (generated from the rows)."""
    java = [r for r in rows if r.get("client") == "java"]
    if not java:
        return JAVA_CALIBRATION
    built = str((setup.get("clients_java") or {}).get("classic") or "kafka-clients").split(", ")
    text = (f"The wire runs use two clients: confluent-kafka (librdkafka) consumers and Apache "
            f"Kafka's Java client, the client the model follows ({', '.join(built[:-1]) or built[0]}); "
            "each row names its client.")
    pairs = []
    for j in java:
        key = (j.get("scenario"), j.get("protocol"), j.get("window"))
        lib = next((r for r in rows if r.get("client") != "java"
                    and (r.get("scenario"), r.get("protocol"), r.get("window")) == key
                    and not r.get("condition")), None)
        if lib is None:
            continue
        cells = []
        for metric in ("converge_after_ms", "lag_record_s"):
            jm, lm = (j.get("metrics") or {}).get(metric) or {}, \
                (lib.get("metrics") or {}).get(metric) or {}
            if jm.get("measured") is None or lm.get("measured") is None:
                continue
            name, unit = _CAL_NAMES.get(metric, (metric, ""))
            cells.append(f"{name} {_n(jm.get('simulated'))} simulated, {_n(lm['measured'])} "
                         f"librdkafka, {_n(j['metrics'][metric]['measured'])} Java {unit}".rstrip())
        if cells:
            pairs.append(f"{key[0]}, {key[1]}: " + "; ".join(cells))
    if pairs:
        text += " Where both measured the same cell: " + " | ".join(pairs) + "."
    return text


def calibration_items(cal: Mapping[str, Any] | None, gaps: Sequence[float] | None = None,
                      runs: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The calibration's part of the section, generated from the results
    (``lab/data/calibration.json``): when, how, how many rows agree; then every row as
    measured (:func:`calibration_row_text`: each checked metric simulated / measured and
    their ratio, within 2x or not; a row measured again under a changed condition does not
    replace a miss, and the page says which rows were such re-measurements); with ``gaps``
    (the ratio between the best and the beaten protocol of each ★ mark) how many of the marks
    are narrower than the calibration's 2x tolerance; with ``runs`` what the calibration did
    not cover (protocols, scenarios, sizes of the tables), from the data."""
    if not cal:
        return ["No calibration against real clients is recorded with this package "
                "(groupcoord lab calibrate --save writes one)."]
    rows = list(cal.get("rows") or [])
    setup = cal.get("setup") or {}
    checked = list(cal.get("checked") or [])
    ok = [r for r in rows if r.get("within_2x")]
    scen = ", ".join(dict.fromkeys(str(r.get("scenario")) for r in rows)) or ", ".join(
        setup.get("scenarios") or [])
    scen = f"scenarios {scen}" if len(set(scen.split(", "))) > 1 else scen
    protos = sorted({str(r.get("protocol")) for r in rows})
    sized = sorted({int(m) for r in rows if (m := r.get("members", setup.get("members")))})
    head = (f"Checked against real clients on {cal.get('measured', '?')} (groupcoord lab "
            f"calibrate): {scen} at {_span(sized)} members, "
            f"{_work(rows, setup)}, each row the median of its wire runs against "
            f"{setup.get('compared_with', 'the simulation')}; protocols {', '.join(protos)}. "
            f"{len(ok)} of {len(rows)} rows within 2x on every checked metric ("
            + ", ".join(_CAL_NAMES.get(c, (c, ""))[0] for c in checked)
            + f"; {cal.get('tolerance', 'within 2x')}); each row below gives every checked "
            "metric as simulated / measured (their ratio). " + clients_text(rows, setup))
    redone = [r for r in rows if r.get("condition")]
    if redone:
        head += (f" {len(redone)} of these rows are measurements taken again under a changed "
                 "condition (" + "; ".join(sorted({str(r['condition']) for r in redone}))
                 + ") after a first measurement missed; a miss is listed as measured, "
                 "and the re-measurement does not replace it.")
    if not any(r.get("settings") for r in rows):
        head += (f" That check ran at {', '.join(map(str, sized)) or '?'} members and its "
                 "own timings (below, where they differ from these runs'), not at the "
                 "settings of the tables above: it checks the model's mechanics at those "
                 "settings only, not these numbers")
    else:
        head += " Each row ran at the settings it names, on both sides"
    if gaps:
        narrow = sum(1 for x in gaps if x < 2.0)
        head += (f"; and a factor of 2 is wider than {narrow:,} of the {len(gaps):,} marked "
                 "differences (best against the closest beaten protocol), so those could flip "
                 "within the calibration's tolerance")
    head += "."
    items = [head]
    for r in rows:
        text = calibration_row_text(r, checked, setup)
        if not r.get("within_2x"):
            again = [str(o.get("condition") or "as first measured") for o in rows
                     if o is not r and o.get("within_2x")
                     and o.get("protocol") == r.get("protocol")
                     and o.get("scenario") == r.get("scenario")
                     and o.get("window") == r.get("window")]
            if again:
                text += (f"; measured again under a changed condition ({'; '.join(again)}) "
                         "it came within 2x, which is another condition: this miss stands")
        items.append(text + ".")
    items += ratios_items(cal)
    items += [t for c in _NEWLY_CHECKED if (t := metric_check_text(rows, c))]
    gaps_text = _not_covered([*rows, *_share_rows(runs), *_connect_rows(runs)], setup, runs)
    if gaps_text:
        items.append(gaps_text)
    return items


#: The metrics checked since 2026-11-28 (reported before): each gets a line of its own saying
#: whether the wire reproduces it and what the lab's marks on it then mean.
_NEWLY_CHECKED = ("stall_ms", "records_reprocessed")
#: What a mark on each of them rests on (the lab's sentences and verdict tables).
_MARKS_ON = {"stall_ms": "stall (the eager barrier, a Connect round's task stops)",
             "records_reprocessed": "records processed twice (after a crash: production since "
                                    "the last commit)"}


def _classify(rows: Sequence[Mapping[str, Any]], metric: str) -> tuple[
        list[Mapping[str, Any]], list[Mapping[str, Any]], list[Mapping[str, Any]],
        list[tuple[Mapping[str, Any], float, float]]]:
    """The rows that check ``metric`` (with both values), split: both below the floor, within
    2x above it, outside 2x (with the simulated and measured values)."""
    floor = _FLOORS.get(metric, 0.0)
    checked = [r for r in rows if metric in row_checked(r)
               and ((r.get("metrics") or {}).get(metric) or {}).get("simulated") is not None
               and ((r.get("metrics") or {}).get(metric) or {}).get("measured") is not None]
    below: list[Mapping[str, Any]] = []
    within: list[Mapping[str, Any]] = []
    outside: list[tuple[Mapping[str, Any], float, float]] = []
    for r in checked:
        v = r["metrics"][metric]
        sv, mv = float(v["simulated"]), float(v["measured"])
        if max(sv, mv) <= floor:
            below.append(r)
        elif min(sv, mv) > 0 and max(sv, mv) <= 2 * min(sv, mv):
            within.append(r)
        else:
            outside.append((r, sv, mv))
    return checked, below, within, outside


def _apart(v: Mapping[str, Any]) -> bool:
    """Two values more than 2x apart (one of them 0 and the other not, too)."""
    lo, hi = sorted((float(v["simulated"]), float(v["measured"])))
    return hi > 2 * lo


def metric_check_brief(cal: Mapping[str, Any] | None, metric: str) -> str:
    """:func:`metric_check_text` in one clause, for a sentence on ``metric``: "" when no row
    checks it."""
    if metric not in _NEWLY_CHECKED or not cal:
        return ""
    checked, below, within, outside = _classify(list(cal.get("rows") or []), metric)
    if not checked:
        return ""
    name, unit = _CAL_NAMES.get(metric, (metric, ""))
    fl = f"{_n(_FLOORS.get(metric, 0.0))} {unit or 'records'}"
    text = (f"{name} against real clients: {len(below) + len(within)} of {len(checked)} rows "
            f"within 2x, {len(below)} of them only below the {fl} floor")
    if outside:
        text += f", {len(outside)} outside (the section 'What the model leaves out' says which)"
    if not within and not outside:
        text += f"; above {fl} this metric is the model's, not checked"
    return text


def metric_check_text(rows: Sequence[Mapping[str, Any]], metric: str) -> str:
    """Whether the stored rows that check ``metric`` find it within 2x, from the data: how
    many rows, which miss and by how much (the larger side over the smaller, or one side 0),
    how many agree only because both sides are below the floor, and what the lab's marks on
    the metric then mean. Empty when no row stores the metric at all."""
    name, unit = _CAL_NAMES.get(metric, (metric, ""))
    floor = _FLOORS.get(metric, 0.0)
    have = [r for r in rows if ((r.get("metrics") or {}).get(metric) or {}).get("measured")
            is not None and ((r.get("metrics") or {}).get(metric) or {}).get("simulated")
            is not None]
    if not have:
        return ""
    checked, below, within, outside = _classify(have, metric)
    label = name[0].upper() + name[1:]
    if not checked:
        return (f"{label} is reported by {len(have)} calibration rows but checked by none "
                "(they were measured before it was checked): the lab's marks on "
                f"{_MARKS_ON.get(metric, name)} are the model's alone, not checked against "
                "real clients.")

    def where(r: Mapping[str, Any]) -> str:
        w = f"{r.get('scenario')} {r.get('protocol')}"
        return w + (f" ({r['window']} window)" if r.get("window") else "")

    fl = f"{_n(floor)} {unit or 'records'}"
    old = sorted({str(r.get("protocol")) for r in have if r not in checked})
    scope = (f" (scenarios {', '.join(dict.fromkeys(str(r.get('scenario')) for r in checked))};"
             f" not checked for {', '.join(old)}: rows measured before, which report it)"
             if old else "")
    text = (f"{label} (floor {fl}): checked by {len(checked)} calibration rows{scope}; "
            f"{len(within) + len(below)} within 2x, {len(below)} of them only because both "
            f"sides are below the floor")
    apart = [r for r in below if _apart(r["metrics"][metric])]
    if apart:
        by_p: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for r in apart:
            by_p[str(r.get("protocol"))].append(r)
        parts = []
        for p, rs in by_p.items():
            if len(rs) == 1:
                parts.append(f"{where(rs[0])} {_n(rs[0]['metrics'][metric]['simulated'])} / "
                             f"{_n(rs[0]['metrics'][metric]['measured'])}"
                             + (f" {unit}" if unit else ""))
                continue
            sims = [float(r["metrics"][metric]["simulated"]) for r in rs]
            meas = [float(r["metrics"][metric]["measured"]) for r in rs]
            in_sc = ", ".join(dict.fromkeys(str(r.get("scenario")) for r in rs))
            parts.append(f"{p} in {len(rs)} rows ({in_sc}): "
                         f"{_n(min(sims))}-{_n(max(sims))} / {_n(min(meas))}-{_n(max(meas))}"
                         + (f" {unit}" if unit else ""))
        text += (" (below it but more than 2x apart: " + "; ".join(parts)
                 + ", simulated / measured: a figure summed over many "
            "disturbances, as a rolling bounce's over its members, adds up values the check "
            "cannot resolve)")
    if within:
        text += (" (above it and within 2x: " + "; ".join(
            f"{where(r)} {_n(r['metrics'][metric]['simulated'])} / "
            f"{_n(r['metrics'][metric]['measured'])}" for r in within) + ")")
    if not outside and not within:
        text += (f"; none outside 2x, and none above the floor: the check says only that both "
                 f"sides stay below {fl} in these scenarios, so the lab's marks on "
                 f"{_MARKS_ON.get(metric, name)} where it exceeds {fl} are the model's alone, "
                 "not checked against real clients.")
        return text
    if not outside:
        text += (f"; none outside 2x. So the lab's marks on {_MARKS_ON.get(metric, name)} rest "
                 "on a metric the wire reproduces within 2x in these scenarios; a difference "
                 f"below {fl} is not resolved by the check.")
        return text
    misses = []
    worst = 0.0
    for r, sv, mv in outside:
        if min(sv, mv) <= 0:
            how = (f"the model {_n(sv)}, the wire {_n(mv)}" + (f" {unit}" if unit else ""))
            worst = float("inf")
        else:
            f = max(sv, mv) / min(sv, mv)
            worst = max(worst, f)
            how = (f"the {'model' if sv > mv else 'wire'} {f:.1f}x the "
                   f"{'wire' if sv > mv else 'model'} ({_n(sv)} / {_n(mv)}"
                   + (f" {unit}" if unit else "") + ")")
        misses.append(f"{where(r)}: {how}")
    scen = sorted({str(r.get("scenario")) for r, _, _ in outside})
    by = "with one side 0" if worst == float("inf") else f"by up to {worst:.1f}x"
    text += (f"; {len(outside)} outside 2x, {by}: " + "; ".join(misses)
             + f". So in {', '.join(scen)} the lab's marks on {_MARKS_ON.get(metric, name)} "
             "give the model's ordering, not one measured on real clients: a mark there "
             "whose gap is smaller than the miss could reverse; elsewhere they rest on rows "
             "within 2x.")
    return text


def calibration_for(scenario: str, protocol: str, members: int | None = None,
                    cal: Mapping[str, Any] | None = None) -> str | None:
    """The calibration row of a table's cell, as the page prints it
    (:func:`calibration_row_text`), for the sentence that the cell supports; None when no row
    measured that scenario and protocol (at ``members``, when given). ``cal``: the package's
    results by default. For the report's sentence writer: each comparison beside the claim it
    supports. A classic Connect cell measured against real Connect workers
    (``lab.wire_connect_calibration``, the package's rows) gets that line first."""
    connect = None
    if cal is None and protocol.startswith("classic-connect:"):
        from groupcoord.lab.wire_connect_calibration import calibration_line

        connect = calibration_line(scenario, protocol, members=members)
    cal = cal if cal is not None else load_calibration()
    if not cal:
        return connect
    setup = cal.get("setup") or {}
    rows = [r for r in cal.get("rows") or []
            if r.get("scenario") == scenario and r.get("protocol") == protocol
            and (members is None or r.get("members", setup.get("members")) == members)]
    if not rows:
        return connect
    return "; ".join([*([connect] if connect else []),
                      *(calibration_row_text(r, list(cal.get("checked") or []), setup)
                        for r in rows)])


# --------------------------------------------------------------- ratios between protocols


#: A ratio between two protocols within this factor of 1 orders neither first (a 10 % gap
#: between two medians of 2-3 wire runs is not a ranking the check can confirm or deny).
RATIO_EVEN = 1.25


@dataclass(frozen=True, slots=True)
class ProtocolRatio:
    """One protocol's metric over another's in the same calibration scenario, client and
    window, simulated and measured: what a ranking between the two rests on (a row each
    within 2x can still carry a ratio off by more)."""

    client: str
    scenario: str
    #: the scenario's window (crash-then-join's ``crash`` or ``scale-out``), "" for the whole
    window: str
    members: int | None
    #: the rows' disturbance (``bounce x6``)
    disturbance: str
    num: str
    den: str
    metric: str
    num_sim: float
    den_sim: float
    num_wire: float
    den_wire: float
    #: a row of the two records a cause for a miss (its ``why``)
    noted: bool = False

    @property
    def sim(self) -> float:
        return self.num_sim / self.den_sim

    @property
    def wire(self) -> float:
        return self.num_wire / self.den_wire

    @property
    def off(self) -> float:
        """How far the simulated ratio is from the measured one: the larger over the smaller."""
        return max(self.sim, self.wire) / min(self.sim, self.wire)

    @staticmethod
    def _side(v: float) -> int:
        return 1 if v > RATIO_EVEN else -1 if v < 1 / RATIO_EVEN else 0

    @property
    def direction(self) -> str:
        """``same``: the wire orders the two protocols as the model does; ``even``: both
        sides within :data:`RATIO_EVEN` of 1; ``reversed``: the other way round; ``wire even`` /
        ``model even``: one side within :data:`RATIO_EVEN` of 1, the other not."""
        s, w = self._side(self.sim), self._side(self.wire)
        if s == w:
            return "same" if s else "even"
        if s and w:
            return "reversed"
        return "wire even" if s else "model even"

    @property
    def same_direction(self) -> bool:
        return self.direction == "same"

    def oriented(self, num: str) -> ProtocolRatio:
        """The same ratio with ``num`` over the other protocol."""
        if num == self.num:
            return self
        return ProtocolRatio(self.client, self.scenario, self.window, self.members,
                             self.disturbance, self.den, self.num, self.metric, self.den_sim,
                             self.num_sim, self.den_wire, self.num_wire, self.noted)

    @property
    def where(self) -> str:
        w = self.scenario + (f" ({self.window} window)" if self.window else "")
        w += f" at {self.members} members" if self.members else ""
        return w + (f", {self.client}" if self.client else "")


def _ratio_values(r: Mapping[str, Any], metric: str) -> tuple[float, float] | None:
    v = (r.get("metrics") or {}).get(metric) or {}
    s, m = v.get("simulated"), v.get("measured")
    return None if s is None or m is None else (float(s), float(m))


def protocol_ratios(cal: Mapping[str, Any] | None) -> list[ProtocolRatio]:
    """Every ratio between two protocols the calibration's rows allow, from the data: per
    client, scenario, window and condition with more than one protocol, each pair of its
    protocols, the one the model puts higher over the other (cooperative/eager), on each
    metric both rows checked with all four values above 0 and not all four below the
    metric's floor (a time to converge after the disturbance that is the same as the time to
    converge is left out, as on the rows)."""
    if not cal:
        return []
    setup = cal.get("setup") or {}
    checked = list(cal.get("checked") or [])
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in cal.get("rows") or []:
        key = (client_label(r, setup), str(r.get("scenario")), str(r.get("window") or ""),
               str(r.get("condition") or ""))
        if all(o.get("protocol") != r.get("protocol") for o in groups[key]):
            groups[key].append(r)
    out: list[ProtocolRatio] = []
    for (client, scenario, window, _cond), rows in groups.items():
        for i, den in enumerate(rows):
            for num in rows[i + 1:]:
                both = [c for c in row_checked(den, checked) if c in row_checked(num, checked)]
                for metric in both:
                    a, b = _ratio_values(num, metric), _ratio_values(den, metric)
                    if a is None or b is None or min(*a, *b) <= 0:
                        continue
                    if max(*a, *b) <= (num.get("floors") or _FLOORS).get(metric, 0.0):
                        continue
                    if metric == "converge_after_ms" and all(
                            _ratio_values(x, metric) == _ratio_values(x, "time_to_converge_ms")
                            for x in (num, den)):
                        continue
                    members = num.get("members", setup.get("members"))
                    x = ProtocolRatio(
                        client, scenario, window, int(members) if members else None,
                        str(num.get("disturbance") or ""), str(num.get("protocol")),
                        str(den.get("protocol")), metric, a[0], b[0], a[1], b[1],
                        bool(num.get("why") or den.get("why")))
                    # the model's higher over its lower (cooperative/eager 4.2x, not 0.24x)
                    out.append(x if x.sim >= 1 else x.oriented(x.den))
    return out


def _x(v: float) -> str:
    if v >= 10:
        return f"{v:,.0f}x"
    return f"{v:.1f}x" if v >= 0.1 else f"{v:.2g}x"


def ratio_text(x: ProtocolRatio, unit: bool = False) -> str:
    """``lag classic:cooperative/classic:eager 4.1x simulated (465 / 112), 1.9x measured
    (326 / 168): 2.1x off``; a ratio the wire reverses says so."""
    name, u = _CAL_NAMES.get(x.metric, (x.metric, ""))
    u = f" {u}" if unit and u else ""
    text = (f"{name} {x.num}/{x.den} {_x(x.sim)} simulated ({_n(x.num_sim)} / {_n(x.den_sim)}"
            f"{u}), {_x(x.wire)} measured ({_n(x.num_wire)} / {_n(x.den_wire)}{u})")
    return text + ": " + direction_text(x)


def direction_text(x: ProtocolRatio) -> str:
    """Whether the wire reproduces the ratio's direction, and how far off the ratio is."""
    off = f"the ratio {_x(x.off)} off" + (" (more than 2x)" if x.off > 2 else "")
    return {"same": f"the wire reproduces the direction, {off}",
            "reversed": f"the wire reverses the direction, {off}",
            "even": f"both find them within {RATIO_EVEN:g}x of each other, {off}",
            "wire even": f"the wire finds them within {RATIO_EVEN:g}x of each other, {off}",
            "model even": f"the model finds them within {RATIO_EVEN:g}x of each other, "
                          f"{off}"}[x.direction]


def ratios_items(cal: Mapping[str, Any] | None) -> list[str]:
    """The calibration section's ratios between protocols (:func:`protocol_ratios`): how many
    are off by more than 2x or reversed on the wire, then, per client and scenario, every
    ratio simulated against measured."""
    ratios = protocol_ratios(cal)
    if not ratios:
        return []
    by_dir: dict[str, list[ProtocolRatio]] = defaultdict(list)
    for x in ratios:
        by_dir[x.direction].append(x)
    far = [x for x in by_dir["same"] if x.off > 2]
    scen = {(x.client, x.scenario, x.window) for x in ratios}
    head = (f"Ratios between protocols, which the rankings rest on (a protocol's metric over "
            f"another's in the same scenario, client and window, the one the model puts higher "
            f"first, simulated against measured; generated from the rows above, each within 2x "
            f"or not; a ratio within {RATIO_EVEN:g}x of 1 orders neither first): "
            f"{len(ratios)} ratios in {len(scen)} scenario{'s' if len(scen) != 1 else ''}; "
            f"the wire reproduces the direction of {len(by_dir['same'])} ({len(far)} of them "
            f"more than 2x off), finds {len(by_dir['even'])} even as the model does, "
            f"reverses {len(by_dir['reversed'])}, finds "
            f"{len(by_dir['wire even'])} even where the model orders them and orders "
            f"{len(by_dir['model even'])} the model finds even. A ranking between two protocols "
            "is checked against real clients only as far as its ratio is, not by each row "
            "being within 2x.")
    items = [head]
    by: dict[tuple[str, str, str], list[ProtocolRatio]] = defaultdict(list)
    for x in ratios:
        by[(x.client, x.scenario, x.window)].append(x)
    for xs in by.values():
        items.append(f"Ratios, {xs[0].where}: " + "; ".join(ratio_text(x) for x in xs) + ".")
    return items


#: A sentence's metric as the calibration's rows name it.
_RATIO_METRIC = {"convergence_ms": "time_to_converge_ms"}


def disturbance_kind(kinds: Iterable[str]) -> tuple[str, ...]:
    """A scenario's kind for the ratios (:func:`pair_ratio_clause`): its disturbances' kinds,
    each once, in order, with ``many`` after a kind that happens more than once (a rolling
    bounce is six ``bounce``: ``("bounce", "many")``); ``slow`` (a member's slow phase, no
    disturbance of the group) left out."""
    seen: dict[str, int] = {}
    for k in kinds:
        if k != "slow":  # a rolling bounce: a bounce of every member
            b = "bounce" if k == "rolling-bounce" else k
            seen[b] = seen.get(b, 0) + (2 if k == "rolling-bounce" else 1)
    return tuple(x for k, n in seen.items() for x in ((k, "many") if n > 1 else (k,)))


def row_kind(r: Mapping[str, Any]) -> tuple[str, ...]:
    """A calibration row's kind (:func:`disturbance_kind`) from its ``disturbance``
    (``bounce x6``); () when the row does not say one kind."""
    d = str(r.get("disturbance") or "").split(" x")
    if len(d) != 2 or not d[1].isdigit():
        return ()
    return disturbance_kind([d[0]] * int(d[1]))


def pair_ratio_clause(cal: Mapping[str, Any] | None, scenario: str, best: Sequence[str],
                      worse: str, metric: str, kind: tuple[str, ...] = ()) -> str:
    """The clause a sentence on ``best`` against ``worse`` on ``metric`` gets from the
    calibration's ratios between the two (:func:`protocol_ratios`), in the sentence's scenario,
    else in calibration scenarios of its ``kind`` (:func:`disturbance_kind`): the loser's value
    over the winner's, simulated against measured, whether the wire reproduces the direction
    and how far the ratio is off. "" when no ratio covers the pair."""
    if not cal or not worse:
        return ""
    m = _RATIO_METRIC.get(metric, metric)
    ratios = protocol_ratios(cal)
    kinds = {(str(r.get("scenario")), str(r.get("window") or "")): row_kind(r)
             for r in cal.get("rows") or []}
    mine = [x for x in ratios if x.metric == m and worse in (x.num, x.den)
            and (x.num if x.den == worse else x.den) in best]
    same = [x for x in mine if x.scenario == scenario]
    if not same and kind:
        same = [x for x in mine if kinds.get((x.scenario, x.window)) == kind]
    if not same:
        return ""
    parts = []
    for x in same:
        o = x.oriented(worse)
        text = f"{o.where}: {ratio_text(o)}"
        if o._side(o.sim) != 1:  # the model there does not put the loser higher itself
            text += (" (there the model itself does not put the sentence's loser higher: "
                     "another cell than the sentence's)")
        if o.noted:
            text += (" (a row of the two records a cause for a miss: 'What the model leaves "
                     "out')")
        parts.append(text)
    where = "" if same[0].scenario == scenario else ", a scenario of the same kind"
    return (f"the calibration's ratio of this pair (the loser's value over the winner's, "
            f"simulated against measured{where}): " + "; ".join(parts))


def _span(values: Sequence[int]) -> str:
    if not values:
        return "?"
    return str(values[0]) if len(values) == 1 else f"{min(values)}-{max(values)}"


def _work(rows: Sequence[Mapping[str, Any]], setup: Mapping[str, Any]) -> str:
    """The calibration workload(s): records/s per partition and ms per record, every value
    the rows used."""
    rates = {(r.get("workload") or {}).get("records_per_s", setup.get("records_per_s"))
             for r in rows} - {None}
    proc = {(r.get("workload") or {}).get("processing_ms", setup.get("processing_ms"))
            for r in rows} - {None}
    return (f"{_values(rates) if rates else '?'} records/s per partition, "
            f"{_values(proc) if proc else '?'} ms per record")


def _connect_rows(runs: Sequence[Mapping[str, Any]],
                  path: Path | None = None) -> list[dict[str, Any]]:
    """The Connect calibration's rows (``lab.wire_connect_calibration``: real Connect workers,
    Apache Kafka's own group membership) as rows of protocol, scenario and members, where the
    tables have Connect runs: the sentences print them, so the "not covered" line must not
    name their cells as never measured."""
    from groupcoord.lab.findings import family
    from groupcoord.lab.wire_connect_calibration import load_rows

    if not any(family(str(r.get("protocol"))) in ("connect", "classic-connect") for r in runs):
        return []
    return [{"protocol": str(r.get("protocol")), "scenario": r.get("scenario"),
             "members": r.get("size")}
            for r in load_rows(path) if r.get("protocol") and r.get("scenario")]


def _share_rows(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The share calibration's cells (``lab.share_report.load_share_calibration``) as rows
    of protocol, scenario and members, where the tables have share runs: they are rows of the
    calibration too, so the "not covered" line names only what neither measured."""
    from groupcoord.lab.findings import family

    if not any(family(str(r.get("protocol"))) == "share" for r in runs):
        return []
    return [{"protocol": str(c.get("protocol") or "share:simple"),
             "scenario": c.get("scenario"), "members": c.get("members")}
            for c in share_cells() if not c.get("error")]


#: The share calibration's results (``lab calibrate --share --save``).
SHARE_CALIBRATION = Path(__file__).parent / "data" / "share_calibration.json"


def share_cells(path: Path | None = None) -> list[dict[str, Any]]:
    """The share calibration's cells (``cells`` of ``lab/data/share_calibration.json``); []
    when the file is not there or is not such a document."""
    try:
        data = json.loads((path or SHARE_CALIBRATION).read_text())
    except (OSError, ValueError):
        return []
    cells = data.get("cells") if isinstance(data, dict) else None
    return [c for c in cells or [] if isinstance(c, dict)]


def _not_covered(rows: Sequence[Mapping[str, Any]], setup: Mapping[str, Any],
                 runs: Sequence[Mapping[str, Any]]) -> str:
    """What the tables use that the calibration never measured: protocols, scenarios and
    group sizes of ``runs`` absent from its rows and setup."""
    if not runs:
        return ""
    protos = {str(r.get("protocol")) for r in rows}
    scens = {str(r.get("scenario")) for r in rows}
    missing = []
    p = sorted({str(r["protocol"]) for r in runs if r.get("protocol")} - protos)
    if p:
        missing.append("protocols " + ", ".join(p))
    sc = sorted({str(r["scenario"]) for r in runs if r.get("scenario")} - scens)
    if sc:
        missing.append("scenarios " + ", ".join(sc))
    sizes = {int(v) for r in runs if (v := r.get("size") or r.get("members"))}
    measured = {int(m) for r in rows if (m := r.get("members", setup.get("members")))}
    sz = sorted(sizes - measured)
    if sz:
        missing.append("group sizes " + ", ".join(f"{v:,}" for v in sz))
    # a share protocol, per scenario: the group sizes of the tables no row of it measured
    # (its rows are few: the three dimensions apart would hide which cells they are)
    from groupcoord.lab.findings import family

    for proto in sorted({str(r["protocol"]) for r in runs if r.get("protocol")} & protos):
        if family(proto) != "share":
            continue
        have = {(str(r.get("scenario")), int(r.get("members") or 0)) for r in rows
                if r.get("protocol") == proto}
        gaps: dict[str, set[int]] = {}
        for r in runs:
            n = int(r.get("size") or r.get("members") or 0)
            if str(r.get("protocol")) == proto and (str(r.get("scenario")), n) not in have:
                gaps.setdefault(str(r.get("scenario")), set()).add(n)
        if gaps:
            missing.append(f"{proto} at " + ", ".join(
                f"{sc} ({', '.join(str(n) for n in sorted(ns))} members)"
                for sc, ns in sorted(gaps.items())))
    if not missing:
        return ""
    return ("Not covered by the calibration (the tables use them; no row measured them "
            "against real clients): " + "; ".join(missing) + ".")


# --------------------------------------------------------------------------- configuration


def cell_scenarios(runs: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The scenario of each distinct cell of the runs, as the lab built it (one per cell);
    a row that cannot be rebuilt (a table written by another version) is skipped."""
    from groupcoord.lab.runs import build_scenario
    from groupcoord.lab.spec import PARAM_COLUMNS, RunParams

    seen: set[tuple[Any, ...]] = set()
    out = []
    for r in runs:
        key = (r.get("scenario"), r.get("size"), r.get("workload"), r.get("fault_rate"),
               r.get("protocol"))
        if key in seen or not all(c in r for c in PARAM_COLUMNS):
            continue
        seen.add(key)
        try:
            out.append((str(r.get("protocol")), build_scenario(RunParams.from_row(r))))
        except Exception as e:  # a scenario of another version: the section says less
            log.debug("scenario of %s: %s", key, e)
    return out


def _alignment_measured() -> str:
    """Which heartbeat alignment the wire measured and when (``lab.wire_spread``)."""
    from groupcoord.lab.wire_spread import alignment_text, load_spread, load_stable

    return alignment_text(load_spread(), load_stable())


def _values(vals: Iterable[Any], unit: str = "") -> str:
    """``50 ms`` or ``0.5, 2, 5 ms``: every value used, in numeric order."""
    uniq = sorted({v for v in vals if v is not None}, key=lambda v: (str(type(v)), v))
    if not uniq:
        return "?"
    text = ", ".join(_n(v) if isinstance(v, int | float) else str(v) for v in uniq)
    return f"{text} {unit}".rstrip()


def _dist(d: Any) -> str:
    if d.kind == "fixed":
        return f"{d.mean:g}"
    if d.kind == "uniform":
        return f"uniform {d.low:g}-{d.high:g}"
    return f"{d.kind} mean {d.mean:g}"


def _growth_producer_text(cells: Sequence[tuple[str, Any]]) -> str:
    """How the model's producers write to a grown topic (``sim.workload``, "A topic's
    growth"), by the ``growth_rate`` the runs used."""
    rates = sorted({sc.workload.growth_rate for _, sc in cells if not sc.workload.idle})
    fixed = ("A topic that grows keeps its production rate, spread over every partition "
             "once they exist, as a producer at a fixed rate does (Kafka's default "
             "partitioner spreads keyless records over the partitions it knows); the old "
             "partitions slow down at the growth. ")
    scaled = ("Under growth_rate partition (a run says so in its load) every partition, the "
              "new ones too, keeps the per-partition rate, so the topic's input grows with "
              "its partition count. ")
    text = (fixed if "topic" in rates else "") + (scaled if "partition" in rates else "")
    return text + ("A producer learns of new partitions at its own metadata refresh "
                   "(metadata.max.age.ms, 5 min by default), which the model leaves out: its "
                   "producers write to a new partition from the growth on, where until its refresh a "
                   "real producer writes those records to the old partitions, which are "
                   "consumed: the lag on new partitions is an upper bound.")


def model_limits(runs: Sequence[Mapping[str, Any]],
                 calibration: Mapping[str, Any] | None = None,
                 scenarios: Sequence[tuple[str, Any]] | None = None,
                 gaps: Sequence[float] | None = None) -> list[str]:
    """The items of "What the model leaves out", filled from the runs' configuration and the
    calibration (``calibration=None``: the package's file)."""
    from groupcoord.lab.findings import family

    cells = list(scenarios) if scenarios is not None else cell_scenarios(runs)
    cal = calibration if calibration is not None else load_calibration()
    work = [sc for _, sc in cells if not sc.workload.idle]
    consumers = [sc for p, sc in cells if not family(p).endswith("connect")]
    connect = [sc for p, sc in cells if family(p).endswith("connect")]
    items: list[str] = []
    if work:
        wl = [sc.workload for sc in work]
        items.append(
            "Members do work as rates between state changes: a record can be polled "
            f"{_values((w.fetch_latency_ms for w in wl), 'ms')} after it was produced (each "
            "member holds that much of its production in flight), processing takes "
            f"{_values({_dist(w.processing_ms) for w in wl}, 'ms')} per record, in batches of "
            f"up to {_values((w.max_poll_records for w in wl), 'records')}; a synchronous "
            f"commit takes {_values((w.commit_latency_ms for w in wl), 'ms')}; a newly "
            f"assigned partition warms up {_values((w.warmup_ms for w in wl), 'ms')}"
            + (f"; a Connect task takes {_values((w.task_start_ms for w in wl), 'ms')} to "
               f"start and {_values((w.task_stop_ms for w in wl), 'ms')} to stop"
               if connect else "")
            + f"; a process starts {_values((w.startup_ms for w in wl), 'ms')} after its "
            "time. Not modelled: producers' batching, fetch sizes, back-pressure from brokers, "
            "state restore volumes, per-record variation beyond the drawn processing time.")
        if consumers:
            items.append(
                "A classic member sees a topic's new partitions at its next metadata refresh "
                f"(metadata.max.age.ms {_values((sc.workload.metadata_max_age_ms for sc in consumers), 'ms')}"
                "), whose phase is drawn per member from the seed; the rebalance comes at the "
                "leader's refresh, so each run waits one uniform draw of the leader's phase "
                "(the Java client's ConsumerCoordinator: only the leader keeps the snapshot "
                "of the metadata it assigned, and rejoins when a refresh no longer matches "
                "it; a follower's refresh in the model sends a JoinGroup that the Stable "
                "group answers with the assignment it has). A partition new to the "
                "group is consumed from its first record (auto.offset.reset=earliest); with "
                "latest, what was produced before the first fetch would be skipped, not lag. "
            + _growth_producer_text(cells))
    elif cells:
        items.append(
            "Members are idle: no poll loop and no processing time, so an eager member rejoins "
            "the moment it hears of a rebalance; downtime and convergence are the "
            "coordination's cost, not the application's.")
    if consumers:
        # a static variant's label (``sim.settings.STATIC_VARIANT``) runs a scenario of
        # dynamic members static: named with its label
        static = sorted({sc.name if sc.name.endswith("static") or "@" not in p
                         else f"{sc.name} as {p}" for p, sc in cells
                         if sc.static and not family(p).endswith("connect")})
        restarts = sorted({sc.name for sc in consumers if not sc.static
                           and ("rolling" in sc.name or "bounce" in sc.name)})
        static_rolling = [n for n in static if "rolling" in n]
        if restarts:
            items.append(
                "Static membership (KIP-345, group.instance.id): "
                + (f"the rolling bounce runs with static members too ({', '.join(static_rolling)}"
                   ": each back within its session timeout keeps its partitions with no "
                   f"rebalance), and {', '.join(static)} in all; the other restarts "
                   if static_rolling else
                   f"run only in {', '.join(static)}; the restarts " if static
                   else "not run; the restarts ")
                + f"({', '.join(restarts)}) restart dynamic members, each "
                "leaving and rejoining the group. A static member back within its "
                "session timeout keeps its partitions with no rebalance, a common way to run "
                "production rolling restarts.")
    if cells:
        spread = sorted({getattr(sc, "heartbeat_spread_ms", 0) for _, sc in cells} - {0})
        spread_labels = any("@hbspread" in str(r.get("protocol")) for r in runs)
        items.append(
            "Classic members' heartbeats aligned: every classic member's heartbeat timer "
            "restarts at the join, so all learn of the next rebalance at the same moment"
            + (f", unless a grid spreads them (heartbeat.spread.ms {_values(spread, 'ms')}, "
               "a model knob)" if spread else "")
            + "; " + (_alignment_measured() or "real members drift apart while the group "
                      "is stable (the wire measurements in the sentences' notes)")
            + ("; the heartbeat-spread grids (hb-spread and the -hbspread companions) rerun "
               "eager marks' cells with the heartbeats spread, and each eager sentence says "
               "what they found in its cell" if spread_labels else "") + ".")
        spreads = {sc.start_spread_ms or 0 for _, sc in cells}
        items.append(
            "Timing: initial members start at offsets drawn from the seed across "
            f"{_values(spreads, 'ms')}, so each seed puts heartbeats elsewhere relative to a "
            "disturbance; the coordinator and the assignors compute in zero simulated time; "
            "one coordinator shard and no brokers (no leadership changes, no append latency "
            "beyond the network's); members' CPU contention and per-request processing time "
            "are not modelled.")
        lat = {sc.latency.describe().replace(":", " ", 1) for _, sc in cells}
        faults = {f"{max(f.loss, f.response_loss, f.duplicate, f.reorder):.0%}"
                  for f in (sc.faults for _, sc in cells)}
        items.append(
            f"Network: one-way latency per message {_values(lat)} ms; fault probability "
            f"per message {_values(faults)} (loss, response loss, duplication, reordering "
            "each, until the faults stop); real networks also have correlated and bursty "
            "faults and pauses.")
    items += calibration_items(cal, gaps, runs)
    note = _calibration_settings_note(runs, cal)
    if note:
        items.append(note)
    return items


#: The calibration's timings and the client settings they correspond to.
_CAL_SETTINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("heartbeat_interval_ms", ("heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms")),
    ("session_timeout_ms", ("session.timeout.ms", "group.consumer.session.timeout.ms")),
    ("rebalance_timeout_ms", ("rebalance.timeout.ms", "max.poll.interval.ms")),
    ("scheduled_rebalance_max_delay_ms", ("scheduled.rebalance.max.delay.ms",)),
    ("assignment_interval_ms", ("group.consumer.assignment.interval.ms",)),
    ("metadata_max_age_ms", ("metadata.max.age.ms",)),
)


def _calibration_settings_note(runs: Sequence[Mapping[str, Any]],
                               cal: Mapping[str, Any] | None) -> str:
    """Where the calibration's timings differ from the settings these runs used: the
    calibration checks the model's mechanics at its own settings, not at these. A row's own
    settings (``settings``, Kafka's names) count; rows without them have the file's
    ``setup``."""
    setup = (cal or {}).get("setup") or {}
    rows = list((cal or {}).get("rows") or [])
    cal_used: dict[str, set[Any]] = defaultdict(set)
    for r in rows:
        own = r.get("settings") or {}
        for key, names in _CAL_SETTINGS:
            if own:
                for n in names:
                    if n in own:
                        cal_used[n].add(own[n])
            elif key in setup:
                for n in names:
                    cal_used[n].add(setup[key])
    if not rows:
        for key, names in _CAL_SETTINGS:
            if key in setup:
                for n in names:
                    cal_used[n].add(setup[key])
    used: dict[str, set[Any]] = defaultdict(set)
    for r in runs:
        for k, v in _settings(r).items():
            used[k].add(v)
    diffs = []
    for _key, names in _CAL_SETTINGS:
        for n in names:
            ours = sorted(v for v in used.get(n, ()) if isinstance(v, int | float))
            theirs = sorted(v for v in cal_used.get(n, ()) if isinstance(v, int | float))
            if not ours or not theirs:
                continue
            if set(ours) - set(theirs):
                diffs.append(f"{n} {', '.join(_n(v) for v in theirs)} ms there, "
                             f"{', '.join(_n(v) for v in ours)} ms here")
    if not diffs:
        return ""
    return ("The calibration ran at other timings than these runs (" + "; ".join(diffs)
            + "): it checks the model's mechanics against real clients at its timings, not "
            "at these.")


# --------------------------------------------------------------------------- settings

#: Apache Kafka's defaults of the settings the runs record, per client kind ("consumer": a
#: classic or KIP-848 consumer; "Connect worker": a distributed worker), from Kafka's
#: configuration docs (ConsumerConfig, DistributedConfig, WorkerConfig).
KAFKA_DEFAULTS: dict[str, dict[str, int | str]] = {
    "auto.offset.reset": {"consumer": "latest"},
    "request.timeout.ms": {"consumer": 30_000, "Connect worker": 40_000},
    "offset.flush.interval.ms": {"Connect worker": 60_000},
    "heartbeat.interval.ms": {"consumer": 3_000, "Connect worker": 3_000},
    "session.timeout.ms": {"consumer": 45_000, "Connect worker": 10_000},
    "rebalance.timeout.ms": {"Connect worker": 60_000},
    "scheduled.rebalance.max.delay.ms": {"Connect worker": 300_000},
    "group.consumer.heartbeat.interval.ms": {"consumer": 5_000},
    "group.consumer.session.timeout.ms": {"consumer": 45_000},
    "metadata.max.age.ms": {"consumer": 300_000},
    "max.poll.interval.ms": {"consumer": 300_000},
    "max.poll.records": {"consumer": 500},
    "auto.commit.interval.ms": {"consumer": 5_000},
    "group.consumer.assignment.interval.ms": {"consumer": 1_000},
    "group.initial.rebalance.delay.ms": {"consumer": 3_000, "Connect worker": 3_000},
    # KIP-932's broker defaults of a share group (Kafka's ShareGroupConfig)
    "group.share.heartbeat.interval.ms": {"share consumer": 5_000},
    "group.share.record.lock.duration.ms": {"share consumer": 30_000},
}

#: The broker's minimum below which Kafka refuses a group's value of a setting (Kafka's
#: GroupConfig validation against GroupCoordinatorConfig's and ShareGroupConfig's bounds:
#: ``group.share.min.record.lock.duration.ms``, SHARE_GROUP_MIN_RECORD_LOCK_DURATION_MS_DEFAULT
#: 15,000 in Kafka 4.2 and 4.3; the heartbeat minimums 5,000), as the coordinator's config
#: names its field: a value under it needs the broker's minimum lowered.
BROKER_MINIMUMS: dict[str, tuple[str, str]] = {
    "group.consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms",
                                             "consumer_min_heartbeat_interval_ms"),
    "group.share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms",
                                          "share_min_heartbeat_interval_ms"),
    "group.share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                            "share_min_record_lock_duration_ms"),
}


def broker_minimum(key: str) -> tuple[str, int] | None:
    """The broker config that bounds a group setting from below and its default (from the
    coordinator's config, :data:`BROKER_MINIMUMS`); None for a setting with no such bound."""
    from groupcoord.coordinator.config import CoordinatorConfig

    if key not in BROKER_MINIMUMS:
        return None
    name, attr = BROKER_MINIMUMS[key]
    return name, int(getattr(CoordinatorConfig(), attr))

#: Settings the runs record that only recent Apache Kafka releases have: what they are and
#: since when (the settings list says so, so a reader does not take them for model knobs).
RECENT_SETTINGS: dict[str, str] = {
    "group.consumer.assignment.interval.ms":
        "a broker setting since Apache Kafka 4.3 (KIP-1263's assignment batching: how often "
        "the coordinator recomputes a consumer group's target assignment; per group: "
        "consumer.assignment.interval.ms), Kafka's default 1,000 ms; on Kafka 4.2 and "
        "earlier the coordinator recomputes the target assignment at the heartbeat that "
        "changes the group, as an interval of 0 would",
}

#: Settings the model applies to every member that polls, whatever the run (so
#: ``settings_json`` does not record them): a partition new to the group is read from its
#: first record (``sim.consumer``).
MODEL_FIXED: dict[str, dict[str, str]] = {"auto.offset.reset": {"consumer": "earliest"}}
#: What Kafka's default would change, per fixed setting, where a topic grows.
FIXED_ON_GROWTH: dict[str, str] = {
    "auto.offset.reset": "with latest, the records written to a new partition before its "
                         "first fetch would be skipped, not counted as lag"}

#: Keys of ``settings_json`` that are the model's own knobs, not Kafka settings.
MODEL_KNOBS: dict[str, str] = {
    "heartbeat.spread.ms": "each join shifts a member's heartbeat phase by up to this much "
                           "(real members' phases drift on their own)",
    "start.stop.threads": "a Connect worker's start/stop pool (Kafka's herder fixes it at 8)",
}


#: The classic coordinator's wait before a new (empty) group's first join round completes,
#: a broker setting the model's classic groups run at (``coordinator.config``); it delays only
#: the group's start-up, which the tables leave out.
INITIAL_DELAY = "group.initial.rebalance.delay.ms"
BROKER_SETTINGS: dict[str, str] = {
    INITIAL_DELAY: "a broker setting: the classic coordinator waits this long before a new, "
                   "empty group's first join round completes; only the group's start-up, "
                   "which the tables leave out, waits on it",
}


def initial_rebalance_delay_ms() -> int:
    """The classic groups' ``group.initial.rebalance.delay.ms`` in the model: the
    coordinator's configuration the simulator builds (``sim.engine``: not overridden)."""
    from groupcoord.coordinator.config import CoordinatorConfig

    return CoordinatorConfig().classic_initial_rebalance_delay_ms


def _classic_group(protocol: str) -> bool:
    """Whether ``protocol``'s group runs on the classic coordinator (classic consumers,
    classic Connect workers)."""
    from groupcoord.lab.findings import family

    return family(protocol) in ("classic", "classic-connect")


def _client_kind(protocol: str) -> str:
    from groupcoord.lab.findings import family

    kind = family(protocol)
    return ("Connect worker" if kind.endswith("connect")
            else "share consumer" if kind == "share" else "consumer")


def settings_notes(runs: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the settings list flags, from the runs' settings: each value that is not Kafka's
    default for its client kind (:data:`KAFKA_DEFAULTS`, the defaults named beside it), and
    each key that is a model knob (:data:`MODEL_KNOBS`). Empty where every value is a
    default and no knob is set."""
    from groupcoord.lab.mechanism import growth_text

    off: dict[str, set[Any]] = defaultdict(set)
    knobs: set[str] = set()
    recent: set[str] = set()
    broker: set[str] = set()
    #: per scenario (and workload where they differ), its grown topic's production
    grown: dict[str, str] = {}
    grown_scenarios: set[str] = set()
    for r in runs:
        text = growth_text(r) if r.get("growth") or "growth" in str(
            r.get("summary_json") or "") else ""
        if text:
            grown.setdefault(f"{r.get('scenario')} ({r.get('workload')})", text)
            grown_scenarios.add(str(r.get("scenario")))
        kind = _client_kind(str(r.get("protocol", "")))
        for k, v in _settings(r).items():
            if k in MODEL_KNOBS:
                knobs.add(k)
            if k in RECENT_SETTINGS:
                recent.add(k)
            if k in BROKER_SETTINGS:
                broker.add(k)
            defaults = KAFKA_DEFAULTS.get(k, {})
            # a share consumer's client settings are a consumer's (ShareConsumerConfig)
            default = defaults.get(kind, defaults.get("consumer") if kind == "share consumer"
                                   else None)
            if (default is not None and isinstance(v, int | float | str)
                    and not isinstance(v, bool) and isinstance(v, str) == isinstance(default, str)
                    and v != default):
                off[k].add(v)
    out = []
    if off:
        def growth(k: str) -> str:
            if k not in FIXED_ON_GROWTH or not grown_scenarios:
                return ""
            return (f"; {FIXED_ON_GROWTH[k]}: the growth rows "
                    f"({', '.join(sorted(grown_scenarios))}) count them")

        def floor(k: str) -> str:
            low = broker_minimum(k)
            under = [v for v in sorted(off[k]) if isinstance(v, int | float) and low
                     and v < low[1]]
            if low is None or not under:
                return ""
            return (f"; Kafka refuses a group's value below the broker's {low[0]}, "
                    f"{_n(low[1])} by default, so {', '.join(_word(v) for v in under)} "
                    f"needs it lowered")

        out.append("Not Kafka's defaults: " + "; ".join(
            f"{k} {', '.join(_word(v) for v in sorted(off[k]))} (Kafka's default: "
            + ", ".join(f"{_word(d)} for a {kind}" for kind, d in KAFKA_DEFAULTS[k].items())
            + growth(k) + floor(k) + ")" for k in sorted(off)) + ".")
    if recent:
        out.append("Kafka settings of recent releases: " + "; ".join(
            f"{k} ({RECENT_SETTINGS[k]})" for k in sorted(recent)) + ".")
    if broker:
        out.append("Broker settings: " + "; ".join(
            f"{k} ({BROKER_SETTINGS[k]})" for k in sorted(broker)) + ".")
    if knobs:
        out.append("Model knobs, not Kafka settings: " + "; ".join(
            f"{k} ({MODEL_KNOBS[k]})" for k in sorted(knobs)) + ".")
    if grown:
        out.append("Production on a grown topic (a model input, not a Kafka setting): "
                   + "; ".join(f"{sc}: {text}" for sc, text in sorted(grown.items())) + ".")
    return out


def _word(v: Any) -> str:
    return v if isinstance(v, str) else _n(v)


def _settings(r: Mapping[str, Any]) -> dict[str, Any]:
    """A run's settings as its protocol reads them (``sim.settings.settings_read``: eager
    Connect has no KIP-415 delay, though older runs recorded one), with the model's fixed
    settings (:data:`MODEL_FIXED`) where its members poll (``max.poll.records`` set)."""
    from groupcoord.sim.settings import settings_read

    raw = r.get("settings_json")
    if not raw:
        return {}
    try:
        d = json.loads(str(raw))
    except ValueError:
        return {}
    if not isinstance(d, dict):
        return {}
    protocol = str(r.get("protocol") or "")
    out = settings_read(protocol, d)
    if _classic_group(protocol):
        out.setdefault(INITIAL_DELAY, initial_rebalance_delay_ms())
    if "max.poll.records" in out and not protocol.startswith("share"):
        kind = _client_kind(protocol)
        for k, by_kind in MODEL_FIXED.items():
            if kind in by_kind:
                out.setdefault(k, by_kind[kind])
    return dict(sorted(out.items()))


def settings_table(runs: Iterable[Mapping[str, Any]]) -> tuple[list[list[str]],
                                                               list[tuple[str, list[str]]]]:
    """Every setting the runs used, from ``settings_json``: ``(column groups, rows)``; a
    column is the protocols whose settings and values are the same, a row ``(setting,
    [value per column])`` (several values: each one used, in order; blank: not a setting of
    those protocols)."""
    by_p: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in runs:
        for k, v in _settings(r).items():
            by_p[str(r["protocol"])][str(k)].add(json.dumps(v, sort_keys=True))
    if not by_p:
        return [], []

    def show(vals: set[str]) -> str:
        parsed = [json.loads(v) for v in vals]
        nums = sorted(v for v in parsed if isinstance(v, int | float) and not isinstance(v, bool))
        rest = sorted(str(v) for v in parsed if not (isinstance(v, int | float)
                                                     and not isinstance(v, bool)))
        return ", ".join([_n(v) if isinstance(v, int | float) else str(v) for v in nums] + rest)

    shown = {p: {k: show(v) for k, v in s.items()} for p, s in by_p.items()}
    groups: dict[str, list[str]] = defaultdict(list)
    for p in sorted(shown):
        groups[json.dumps(shown[p], sort_keys=True)].append(p)
    cols = list(groups.values())
    names = sorted({k for s in shown.values() for k in s})
    rows = [(k, [shown[ps[0]].get(k, "") for ps in cols]) for k in names]
    return cols, rows


__all__ = [
    "CALIBRATION_FILE",
    "CALIBRATION_JAVA_FILE",
    "KAFKA_DEFAULTS",
    "MODEL_KNOBS",
    "ProtocolRatio",
    "calibration_for",
    "calibration_items",
    "calibration_ratio",
    "calibration_row_text",
    "calibration_rows",
    "cell_scenarios",
    "client_label",
    "clients_text",
    "load_calibration",
    "merged_calibration",
    "model_limits",
    "pair_ratio_clause",
    "protocol_ratios",
    "ratios_items",
    "save_calibration",
    "settings_notes",
    "settings_table",
    "with_java_rows",
]
