"""``groupcoord lab``: the PySpark pipeline from the command line (docs/lab.md).

- ``groupcoord lab run SPEC.toml --out DIR [--master URL]`` (or ``--spec quick|paper``): the
  sweep on Spark, its Parquet tables, the aggregates and the report (``DIR/report/index.html``).
  Progress (runs done / total) goes to stderr. Exit status 1 when a run violated an invariant
  (each is printed with the command that reproduces it), 0 otherwise.
- ``groupcoord lab audit DATA_DIR --out DIR [--master URL]``: the audit of a ``groupcoord
  serve`` data directory's record log (``lab.audit``), as Parquet and in the report.
- ``groupcoord lab rerun --scenario S --protocol P --seed N [--size M] [--topics T
  --partitions P] [--fault-rate F] [--spec SPEC]``: one run of a sweep again, without Spark
  (the command a violation names); ``--trace FILE`` writes its trace.
- ``groupcoord lab report DIR``: render the report again from the tables in ``DIR``.
- ``groupcoord lab calibrate [--scenario S] [--protocol P ...] [--size N] [--workload K=V ...]
  [--heartbeat-interval-ms MS] [--session-timeout-ms MS] [--server-config K=V ...] [--json]
  [--save [FILE]]``: the scenario in the simulator and on the wire against ``groupcoord serve``
  with real clients, simulated vs measured per metric (``lab.calibrate``); ``--save`` stores
  the results where the report's "What the model leaves out" reads them (``lab.limits``).
  Exit 2 on a bad parameter, 1 when a run failed.
- ``groupcoord lab pack``: pack (or find in the cache) the executors' environment archive and
  the package zip (``lab.ship``) and print the ``spark-submit`` options that ship them.

The default master is ``local[*]``; ``--master`` takes any Spark master URL. With a master
that is not local, ``run`` and ``audit`` ship the executors' environment themselves (the
driver's virtualenv packed, or ``--archive``; ``--no-ship`` to rely on the nodes' Python) and
check with a probe job that an executor can run the simulator before starting; when it cannot,
they print one line saying why and exit 2 (``docs/lab.md`` "On a cluster"). CLI output goes
to stdout with ``print``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from groupcoord.commands import command, int_at_least, output_dir
from groupcoord.lab.session import DEFAULT_DRIVER_MEMORY, DEFAULT_MASTER
from groupcoord.lab.spec import BUILTIN_SPECS, SpecError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.lab.sweep import Progress

#: How long the probe job may wait for an executor (``lab.probe``).
DEFAULT_PROBE_TIMEOUT_S = 180.0


def _progress(p: Progress) -> None:
    print(f"lab: {p.format()}", file=sys.stderr, flush=True)


class _CannotRun(Exception):
    """The session cannot run the lab's executors; the message is printed as is."""


def _conf(pairs: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _CannotRun(f"--conf {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def _session(ns: argparse.Namespace) -> SparkSession:
    """The Spark session of ``run`` / ``audit``: with a master that is not local, the
    executors' environment shipped (unless ``--no-ship`` or spark-submit already has its
    options) and an executor probed. :class:`_CannotRun` when either fails."""
    from groupcoord.lab.probe import ProbeError, check_executors, describe
    from groupcoord.lab.session import is_local, make_session, under_spark_submit
    from groupcoord.lab.ship import ShipError, ship

    conf = _conf(ns.conf)
    shipped = None
    remote = ns.master is not None and not is_local(ns.master)
    if remote and not ns.no_ship and not under_spark_submit():
        try:
            shipped = ship(Path(ns.env_cache) if ns.env_cache else None, ns.python_prefix,
                           Path(ns.archive) if ns.archive else None)
        except ShipError as e:
            raise _CannotRun(str(e)) from None
        how = "packed" if shipped.packed else ("given" if ns.archive else "cached")
        size = shipped.archive.stat().st_size / 1e6
        print(f"lab: executors' environment {shipped.archive} ({size:.0f} MB, {how}, "
              f"{shipped.pack_s:.1f} s) and {shipped.package_zip.name}", file=sys.stderr,
              flush=True)
    spark = make_session(ns.master, driver_memory=ns.driver_memory, conf=conf, ship=shipped)
    if not is_local(str(spark.sparkContext.master)) and not ns.no_probe:
        try:
            info = check_executors(spark, ns.probe_timeout)
        except ProbeError as e:
            spark.stop()
            raise _CannotRun(str(e)) from None
        print(f"lab: {describe(info)}", file=sys.stderr, flush=True)
    return spark


def _run(ns: argparse.Namespace) -> int:
    from groupcoord.lab.spec import cells, expand, load_spec, restrict

    source = ns.spec_opt or ns.spec
    if source is None:
        print(f"error: give a spec file or --spec NAME ({', '.join(sorted(BUILTIN_SPECS))})",
              file=sys.stderr)
        return 2
    if ns.spec_opt and ns.spec:
        print("error: give a spec file or --spec, not both", file=sys.stderr)
        return 2
    try:
        spec = load_spec(source)
        if ns.events:
            from dataclasses import replace

            spec = replace(spec, events=True)
        if ns.only_scenario or ns.only_size or ns.only_workload or ns.only_protocol \
                or ns.only_grid:
            spec = restrict(spec, scenarios=ns.only_scenario or (), sizes=ns.only_size or (),
                            workloads=ns.only_workload or (),
                            protocols=ns.only_protocol or (), grids=ns.only_grid or ())
        runs = expand(spec)
    except (SpecError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"sweep {spec.name}: {len(runs)} runs in {cells(runs)} cells "
          f"({', '.join(spec.resolved_protocols())})")
    if ns.dry_run:
        return 0
    from groupcoord.lab.sweep import run_sweep

    try:
        spark = _session(ns)
    except _CannotRun as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        outcome = run_sweep(spark, spec, ns.out, per_task=ns.runs_per_task, progress=_progress)
    finally:
        if not ns.keep_session:
            spark.stop()
    for v in outcome.violations:
        print(f"VIOLATION {v['invariant']} ({v['protocol']}, {v['scenario']}, seed {v['seed']}): "
              f"{v['message']}\n  reproduce with: {v['command']}")
    print(f"{outcome.runs} runs, {len(outcome.violations)} violations, simulations "
          f"{outcome.sim_s:.1f} s, total {outcome.wall_s:.1f} s")
    print(f"tables in {outcome.out_dir}; report {outcome.report}")
    return 1 if outcome.violations else 0


def _audit(ns: argparse.Namespace) -> int:
    from groupcoord.lab.audit import AuditError, read_log, run_audit

    try:
        read_log(ns.data_dir)  # fail before starting Spark
        spark = _session(ns)
    except (AuditError, _CannotRun) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        outcome = run_audit(spark, ns.data_dir, ns.out)
    finally:
        spark.stop()
    print(f"audited {outcome.log_path}: {outcome.entries} entries, {len(outcome.groups)} groups")
    for g in outcome.groups:
        rate = g["rebalances_per_hour"]
        print(f"  {g['group_id']:<30} {g['group_type']:<9} epoch {g['group_epoch']:>5} "
              f"rebalances {g['rebalances']:>5} "
              f"({'-' if rate is None else f'{rate:.1f}/h'}) joined {g['members_joined']} "
              f"left {g['members_left']} moved {g['resources_moved']}")
    if outcome.gaps:
        print(f"  shards {outcome.gaps} were compacted: their history is partial")
    print(f"tables in {Path(ns.out) / 'audit'}; report {outcome.report}")
    return 0


def _rerun(ns: argparse.Namespace) -> int:
    from groupcoord.lab.runs import build_scenario, simulate_run
    from groupcoord.lab.spec import RunParams, load_spec, scenario_definition, standalone_spec
    from groupcoord.sim.runner import print_result
    from groupcoord.sim.scenario import ScenarioError

    try:
        spec = load_spec(ns.spec) if ns.spec else standalone_spec()
        if (ns.topics is None) != (ns.partitions is None):
            raise SpecError("--topics and --partitions go together")
        params = RunParams(
            run_id="rerun", sweep=spec.name, protocol=ns.protocol, scenario=ns.scenario,
            scenario_def=scenario_definition(spec, ns.scenario), size=ns.size,
            workload="rerun", topics=ns.topics, partitions=ns.partitions,
            connectors=ns.connectors, tasks=ns.tasks, fault_rate=ns.fault_rate, replicate=0,
            seed=ns.seed, events=bool(ns.trace), checkpoint_every=ns.checkpoint_every,
            max_steps=ns.max_steps, spec_ref=ns.spec or "", work=ns.work)
        sc = build_scenario(params)
        res = simulate_run(params, sc)
    except (SpecError, ScenarioError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return print_result(res, ns.trace, ns.json)


def _report(ns: argparse.Namespace) -> int:
    from groupcoord.lab.report import build_report

    print(build_report(ns.dir))
    return 0


def _calibrate_share(ns: argparse.Namespace) -> int:
    import json
    import os
    import time

    from groupcoord.lab.calibrate import CalibrationError
    from groupcoord.lab.share_calibration import (
        SAVED,
        SCENARIOS,
        SIZES,
        WARMUP_MS,
        WORKLOAD,
        as_json,
        calibrate_share,
        cell_params,
        format_share_runs,
        format_share_table,
        save_share_calibration,
    )

    scenarios = [ns.scenario] if ns.scenario else list(SCENARIOS)
    sizes = [ns.size] if ns.size is not None else list(SIZES)
    try:
        # with --share, --workload names one of the share spec's workloads
        if ns.workload and (len(ns.workload) > 1 or "=" in ns.workload[0]):
            raise CalibrationError("with --share, --workload takes one workload of "
                                   "lab/data/share.toml by name (e.g. 1x12-busy)")
        workload = ns.workload[0] if ns.workload else WORKLOAD
        # with --share, --protocol picks the side: share:simple (default) or consumer:uniform
        if ns.protocol and len(ns.protocol) > 1:
            raise CalibrationError("with --share, --protocol takes one side: share:simple or "
                                   "consumer:uniform")
        protocol = ns.protocol[0] if ns.protocol else "share:simple"
        if ns.save is not None and ns.sim_only:
            raise CalibrationError("--save stores wire runs: not with --sim-only")
        for sc in scenarios:
            for size in sizes:
                cell_params(sc, size, ns.repeat, workload=workload, protocol=protocol)
    except (CalibrationError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    def progress(msg: str) -> None:
        if not ns.quiet:
            print(f"calibrate: {msg}", file=sys.stderr, flush=True)

    began, load = time.time(), os.getloadavg()[0]
    try:
        cells = calibrate_share(scenarios, sizes, repeat=ns.repeat,
                                warmup_ms=ns.warmup_ms or WARMUP_MS, wire=not ns.sim_only,
                                workload=workload, progress=progress,
                                keep=Path(ns.keep) if ns.keep else None, protocol=protocol)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    cmd = "groupcoord lab calibrate " + " ".join(
        a for a in sys.argv[1:] if a not in ("lab", "calibrate")) if \
        sys.argv[1:3] == ["lab", "calibrate"] else ""
    for c in cells:
        c.measured["command"] = cmd
    if ns.json:
        print(json.dumps({"protocol": protocol, "repeat": ns.repeat,
                          "cells": as_json(cells)}, indent=1, default=str))
    else:
        client = "ShareConsumers" if protocol == "share:simple" else "consumers"
        print(f"{protocol} against confluent-kafka {client}, {ns.repeat} run(s) a row,"
              f" {time.time() - began:.0f} s, 1-minute load {load:.1f}-"
              f"{os.getloadavg()[0]:.1f}")
        print(format_share_table(cells))
        if ns.windows:
            print(format_share_runs(cells))
    if ns.save is not None:
        try:
            path = save_share_calibration(cells, Path(ns.save) if ns.save else SAVED)
        except (CalibrationError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"share calibration saved to {path}", file=sys.stderr)
    return 1 if any(c.error for c in cells) else 0


def _calibrate(ns: argparse.Namespace) -> int:
    import json
    import os
    import time
    from dataclasses import asdict

    from groupcoord.lab.calibrate import (
        DEFAULT_PROTOCOLS,
        CalibrationError,
        as_json,
        calibrate,
        calibration_scenario,
        check_protocols,
        format_table,
        own_settings,
        parse_workload,
    )
    from groupcoord.lab.wire import WIRE_PROTOCOLS, WireError, check_playable
    from groupcoord.server.settings import check_properties
    from groupcoord.sim.scenario import ScenarioError, load_scenario

    if ns.share:
        return _calibrate_share(ns)
    if ns.connect:  # real Connect workers, the KIP-415 grid's metrics
        from groupcoord.lab.wire_connect_calibration import run_cli
        return run_cli(ns)
    ns.scenario = ns.scenario or "rolling-bounce"
    try:
        java = ns.client == "java"
        # the Java members are consumers: by default the consumer protocols of the defaults
        protocols = check_protocols(ns.protocol or [
            p for p in DEFAULT_PROTOCOLS if not java or WIRE_PROTOCOLS[p][0] == "consumer"])
        no_java = [p for p in protocols if java and WIRE_PROTOCOLS[p][0] != "consumer"]
        if no_java:
            raise CalibrationError(f"--client java: {', '.join(no_java)} has no Java client "
                                   "(the Java members are consumers)")
        wl = parse_workload(ns.workload or [])
        extra: dict[str, str] = {}
        for pair in ns.server_config or []:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise CalibrationError(f"--server-config takes KEY=VALUE, got {pair!r}")
            extra[key] = value
        check_properties(extra)  # the server's own check: an unknown key is one line here
        for name in ("heartbeat_interval_ms", "session_timeout_ms", "seed"):
            v = getattr(ns, name)
            if v is not None and v < (0 if name == "seed" else 1):
                raise CalibrationError(f"--{name.replace('_', '-')} must be at least "
                                       f"{0 if name == 'seed' else 1}, got {v}")
        loaded = load_scenario(ns.scenario, ns.seed)
        table = None
        if Path(ns.scenario).is_file():  # a file's own settings stay (a built-in's: none)
            import tomllib

            table = tomllib.loads(Path(ns.scenario).read_text())
        own = own_settings(table, ns.heartbeat_interval_ms, ns.session_timeout_ms)
        sc = calibration_scenario(loaded, ns.size, ns.heartbeat_interval_ms,
                                  ns.session_timeout_ms)
        check_playable(sc)
    except (CalibrationError, ScenarioError, WireError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if java:
        from groupcoord.lab.wire_java import JavaClientMissing, java_client

        try:
            java_client()
        except JavaClientMissing as e:
            print(f"error: {e}", file=sys.stderr)
            return 1

    def progress(msg: str) -> None:
        if not ns.quiet:
            print(f"calibrate: {msg}", file=sys.stderr, flush=True)

    began, load_before = time.time(), os.getloadavg()[0]
    try:
        results = calibrate(sc, protocols, wl, seed=ns.seed, seeds=ns.seeds, repeat=ns.repeat,
                            extra_server_config=extra, tail_s=ns.tail_s, progress=progress,
                            keep=Path(ns.keep) if ns.keep else None, settings=ns.settings,
                            own=own, client=ns.client)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if ns.json:
        print(json.dumps({"scenario": sc.name, "members": sc.members,
                          "workload": asdict(wl),
                          "results": as_json(results)}, indent=1, default=str))
    else:
        print(f"scenario {sc.name} ({sc.members} members, {ns.settings} settings), "
              f"workload {', '.join(f'{k}={v}' for k, v in asdict(wl).items())}")
        for r in results:
            print(f"  {r.protocol}: " + ", ".join(f"{k} {v:,}" for k, v in r.settings.items()))
        print(format_table(results, windows=ns.windows))
    if ns.save is not None:
        import datetime

        from groupcoord.lab.calibrate import CHECKED, FLOORS
        from groupcoord.lab.limits import (
            CALIBRATION_FILE,
            CALIBRATION_JAVA_FILE,
            calibration_rows,
            load_calibration,
            merged_calibration,
            save_calibration,
        )

        path = Path(ns.save) if ns.save else CALIBRATION_JAVA_FILE if java else CALIBRATION_FILE
        setup: dict[str, object] = {"compared_with": "the paired simulated seeds"}
        if java:
            from groupcoord.lab.wire_java import java_client

            built = java_client().describe
            setup["clients"] = {"classic": f"{built}, group.protocol=classic",
                                "consumer": f"{built}, group.protocol=consumer"}
        cmd = "groupcoord lab calibrate " + " ".join(
            a for a in sys.argv[1:] if a not in ("lab", "calibrate")) if \
            sys.argv[1:3] == ["lab", "calibrate"] else ""
        run = {"members": sc.members, "wire_runs": ns.repeat, "seeds": ns.seeds,
               "seed": ns.seed, "settings_source": ns.settings, "workload": asdict(wl),
               "wall_s": round(time.time() - began), "command": cmd,
               **({"client": "java"} if java else {}),
               **({"note": ns.note} if ns.note else {}),
               "load": [round(load_before, 1), round(os.getloadavg()[0], 1)]}
        data = merged_calibration(
            load_calibration(path) if path.exists() else None,
            calibration_rows(results, sc.name, run=run), setup, CHECKED,
            datetime.datetime.now(datetime.UTC).date().isoformat())
        data["tolerance"] = "within 2x, or both below a floor (" + ", ".join(
            f"{k} {v:g}" for k, v in FLOORS.items()) + ")"
        print(f"calibration results saved to {save_calibration(data, path)}", file=sys.stderr)
    return 1 if any(r.error for r in results) else 0
def _pack(ns: argparse.Namespace) -> int:
    from groupcoord.lab.ship import ShipError, ship

    try:
        shipped = ship(Path(ns.env_cache) if ns.env_cache else None, ns.python_prefix)
    except ShipError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    size = shipped.archive.stat().st_size / 1e6
    print(f"environment {shipped.archive} ({size:.0f} MB, "
          f"{'packed' if shipped.packed else 'cached'} in {shipped.pack_s:.1f} s): "
          f"{', '.join(shipped.distributions)}")
    print(f"package {shipped.package_zip}")
    print("spark-submit options: " + " ".join(shlex.quote(a) for a in shipped.submit_args()))
    return 0


def _shipping(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env-cache", metavar="DIR",
                   help="where packed environments are cached (default $GROUPCOORD_LAB_CACHE, "
                        "else ~/.cache/groupcoord/lab)")
    p.add_argument("--python-prefix", metavar="DIR",
                   help="where Python lives on the nodes, if not where it does here "
                        "(venv-pack's --python-prefix)")


def _common_spark(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", default=None,
                   help=f"Spark master URL (default: spark-submit's, else {DEFAULT_MASTER})")
    p.add_argument("--driver-memory", default=DEFAULT_DRIVER_MEMORY,
                   help=f"Spark driver memory (default {DEFAULT_DRIVER_MEMORY}; local mode runs "
                        f"the executors in the driver)")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help="a Spark setting (repeatable), e.g. spark.executor.memory=2g")
    p.add_argument("--archive", metavar="FILE",
                   help="a packed environment for the executors (default with a master that is "
                        "not local: the driver's virtualenv, packed and cached)")
    p.add_argument("--no-ship", action="store_true",
                   help="ship nothing: the executors' own Python has groupcoord and its "
                        "dependencies")
    p.add_argument("--no-probe", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--probe-timeout", type=float, default=DEFAULT_PROBE_TIMEOUT_S, metavar="S",
                   help="how long an executor may take to run the check job before the "
                        f"sweep (default {DEFAULT_PROBE_TIMEOUT_S:.0f} s)")
    _shipping(p)


@command("lab", "the PySpark lab: sweeps of simulations, Parquet tables, report, log audit")
def _lab_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="lab_command", required=True)

    run = sub.add_parser("run", help="run a sweep on Spark, aggregate, write the report")
    run.add_argument("spec", nargs="?", help="a sweep spec (.toml) or a built-in name")
    run.add_argument("--spec", dest="spec_opt", metavar="NAME",
                     help=f"a built-in spec ({', '.join(sorted(BUILTIN_SPECS))}) or a file")
    run.add_argument("--out", type=output_dir, required=True,
                     help="output directory (tables and report)")
    _common_spark(run)
    run.add_argument("--events", action="store_true", help="also write every run's trace")
    run.add_argument("--runs-per-task", type=int, default=None, metavar="N",
                     help="runs per Spark task (default: 4 tasks per core, at most 100 runs)")
    run.add_argument("--dry-run", action="store_true", help="expand the spec and stop")
    run.add_argument("--scenario", dest="only_scenario", action="append", metavar="NAME",
                     help="run only this scenario of the spec (repeatable; same seeds)")
    run.add_argument("--size", dest="only_size", action="append", type=int, metavar="N",
                     help="run only this size of the spec (repeatable)")
    run.add_argument("--workload", dest="only_workload", action="append", metavar="NAME",
                     help="run only this workload of the spec (repeatable)")
    run.add_argument("--protocol", dest="only_protocol", action="append", metavar="LABEL",
                     help="run only this protocol of the spec (repeatable)")
    run.add_argument("--grid", dest="only_grid", action="append", metavar="NAME",
                     help="run only this grid of the spec (repeatable; same seeds)")
    run.add_argument("--keep-session", action="store_true", help=argparse.SUPPRESS)
    run.set_defaults(func=_run)

    audit = sub.add_parser("audit", help="audit the record log of a groupcoord serve data dir")
    audit.add_argument("data_dir", help="the server's --data-dir (sqlite storage)")
    audit.add_argument("--out", type=output_dir, required=True,
                       help="output directory (tables and report)")
    _common_spark(audit)
    audit.set_defaults(func=_audit)

    rerun = sub.add_parser("rerun", help="run one run of a sweep again, without Spark")
    rerun.add_argument("--scenario", required=True)
    rerun.add_argument("--protocol", required=True)
    rerun.add_argument("--seed", type=int, required=True)
    rerun.add_argument("--spec", help="the spec defining the scenario (inline scenarios)")
    rerun.add_argument("--size", type=int)
    rerun.add_argument("--topics", type=int)
    rerun.add_argument("--partitions", type=int)
    rerun.add_argument("--connectors", type=int)
    rerun.add_argument("--tasks", type=int)
    rerun.add_argument("--fault-rate", type=float)
    rerun.add_argument("--max-steps", type=int)
    rerun.add_argument("--checkpoint-every", type=int, default=2_000)
    rerun.add_argument("--work", metavar="JSON",
                       help="the workload's overrides of the scenario's [workload] (JSON)")
    rerun.add_argument("--trace", metavar="FILE", help="write the full event trace ('-': stdout)")
    rerun.add_argument("--json", action="store_true", help="print the result as JSON")
    rerun.set_defaults(func=_rerun)

    cal = sub.add_parser("calibrate", help="a scenario in the simulator and on the wire with "
                                           "real clients: simulated vs measured metrics")
    cal.add_argument("--scenario", default=None,
                     help="a built-in scenario or a scenario file (default rolling-bounce; "
                          "with --share: bounce or crowd-crash, default both)")
    cal.add_argument("--share", action="store_true",
                     help="share groups (share:simple) against real ShareConsumers at the "
                          "share spec's settings (lab/data/share.toml; docs/lab.md)")
    cal.add_argument("--connect", action="store_true",
                     help="the kip415 grid's classic-connect cells against real Connect workers "
                          "(Apache Kafka's connect-runtime membership, "
                          "scripts/build_connect_runtime.py): task restarts, task downtime, "
                          "time until balanced (--save: lab/data/calibration-connect.json)")
    cal.add_argument("--warmup-ms", type=int_at_least(1), default=None,
                     help="with --share: when the disturbance comes (plus the seed's phase; "
                          "default 30000)")
    cal.add_argument("--sim-only", action="store_true", help=argparse.SUPPRESS)
    cal.add_argument("--protocol", action="append", metavar="LABEL",
                     help="repeatable; default: classic:eager, classic:cooperative, "
                          "consumer:uniform, connect:cooperative, classic-connect:sessioned")
    cal.add_argument("--client", choices=("librdkafka", "java"), default="librdkafka",
                     help="the consumers on the wire: confluent-kafka (librdkafka, default) or "
                          "Apache Kafka's Java client built on this machine "
                          "(scripts/build_kafka_clients.py; docs/clients.md)")
    cal.add_argument("--size", type=int, default=None, help="initial members")
    cal.add_argument("--workload", action="append", metavar="KEY=VALUE",
                     help="records_per_s, processing_ms, max_poll_records, "
                          "auto_commit_interval_ms, task_start_ms, task_stop_ms, "
                          "offset_flush_interval_ms, metadata_max_age_ms (repeatable); with "
                          "--share: one workload of the share spec by name (default 1x4-busy)")
    cal.add_argument("--heartbeat-interval-ms", type=int, default=None,
                     help="the scenario's heartbeat interval, for both sides")
    cal.add_argument("--session-timeout-ms", type=int, default=None,
                     help="the scenario's session timeout, for both sides")
    cal.add_argument("--server-config", action="append", metavar="KEY=VALUE",
                     help="more broker configs for the wire (the simulator's coordinator does "
                          "not see them: only settings it does not model)")
    cal.add_argument("--note", default=None, metavar="TEXT",
                     help="with --save: how the rows' scenario differs from the tables' cell "
                          "of the same name (printed with each row)")
    cal.add_argument("--settings", choices=("field", "scenario"), default="field",
                     help="each protocol's group at the field's settings, as the lab's tables "
                          "(default), or at the scenario's own timings")
    cal.add_argument("--seed", type=int, default=1,
                     help="the first seed (the simulator's seeds and the wire runs' start "
                          "offsets count up from it)")
    cal.add_argument("--seeds", type=int_at_least(1), default=21,
                     help="simulated seeds (default 21): the wire runs are checked against the "
                          "median of their paired seeds, the median of all is printed beside")
    cal.add_argument("--repeat", type=int_at_least(1), default=1,
                     help="wire runs; each metric is their median (default 1)")
    cal.add_argument("--tail-s", type=float, default=5.0, help=argparse.SUPPRESS)
    cal.add_argument("--keep", metavar="DIR", default=None,
                     help="keep every wire run's logs (server, members) under DIR/PROTOCOL/RUN")
    cal.add_argument("--json", action="store_true", help="print the result as JSON")
    cal.add_argument("--windows", action="store_true",
                     help="print every disturbance window, not only each protocol's summary")
    cal.add_argument("--quiet", action="store_true", help="no progress on stderr")
    cal.add_argument("--save", nargs="?", const="", default=None, metavar="FILE",
                     help="store the results where the lab's report reads them (default: the "
                          "package's lab/data/calibration.json; with --share "
                          "lab/data/share_calibration.json): rows of the same scenario and "
                          "protocol are replaced in place, new ones appended, others kept "
                          "(--share: cells of the same scenario, members and workload "
                          "replaced, in a stable order)")
    cal.set_defaults(func=_calibrate)

    report = sub.add_parser("report", help="render DIR/report again from DIR's tables")
    report.add_argument("dir")
    report.set_defaults(func=_report)

    pack = sub.add_parser("pack", help="pack the executors' environment (for spark-submit)")
    _shipping(pack)
    pack.set_defaults(func=_pack)
