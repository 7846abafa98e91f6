"""``groupcoord users add|list|remove``: the SCRAM credentials of a data directory, offline
(like ``kafka-storage format --add-scram`` / ``kafka-configs --alter --add-config
'SCRAM-SHA-256=[...]'``, on the files instead of over the wire).

- ``users add NAME [--password P | --password-file F] [--mechanism M ...] [--iterations N]
  --data-dir D``: salted credentials for each mechanism (default both SCRAM-SHA-256 and
  SCRAM-SHA-512; the password is read from stdin when neither option is given); replaces
  existing ones. A running server on that directory sees the change at the next authentication.
- ``users list --data-dir D [--json]``: users with their mechanisms and iteration counts.
- ``users remove NAME [--mechanism M ...] --data-dir D``: all of the user's credentials, or
  those mechanisms'.

Errors are one line on stderr, exit status 1.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from groupcoord.commands import command, int_at_least
from groupcoord.server.security.credentials import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MECHANISMS,
    CredentialError,
    CredentialStore,
)


def _store(ns: argparse.Namespace) -> CredentialStore:
    d = Path(ns.data_dir)
    if not d.is_dir():
        raise CredentialError(f"no data directory {d}")
    return CredentialStore(d)


def _password(ns: argparse.Namespace) -> str:
    if ns.password is not None:
        return str(ns.password)
    if ns.password_file is not None:
        try:
            return Path(ns.password_file).read_text().rstrip("\r\n")
        except OSError as e:
            raise CredentialError(f"cannot read --password-file: {e}") from None
    if sys.stdin.isatty():
        return getpass.getpass(f"password for {ns.name}: ")
    return sys.stdin.readline().rstrip("\r\n")


def _add(ns: argparse.Namespace) -> int:
    store = _store(ns)
    password = _password(ns)
    mechs = ns.mechanism or list(MECHANISMS)
    for m in mechs:
        store.add(ns.name, m, password, ns.iterations)
    print(f"User {ns.name}: {', '.join(m.upper() for m in mechs)} ({ns.iterations} iterations).")
    return 0


def _list(ns: argparse.Namespace) -> int:
    users = _store(ns).users()
    if ns.json:
        print(json.dumps([{"user": u, "credentials": [{"mechanism": m, "iterations": i}
                                                      for m, i in ms.items()]}
                          for u, ms in users.items()], indent=2))
    elif not users:
        print("(no users)")
    else:
        for u, ms in users.items():
            print(f"{u}  " + ", ".join(f"{m} ({i} iterations)" for m, i in ms.items()))
    return 0


def _remove(ns: argparse.Namespace) -> int:
    removed = _store(ns).remove(ns.name, ns.mechanism)
    print(f"User {ns.name}: removed {', '.join(removed)}.")
    return 0


def _guard(fn: object) -> object:
    def run(ns: argparse.Namespace) -> int:
        try:
            return int(fn(ns))  # type: ignore[operator]
        except (CredentialError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    return run


@command("users", "add, list, remove SCRAM users of a data directory (offline)")
def _users_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="users_command", required=True)
    a = sub.add_parser("add", help="add or replace a user's SCRAM credentials")
    a.add_argument("name")
    a.add_argument("--password", default=None, help="(else --password-file, else stdin)")
    a.add_argument("--password-file", default=None)
    a.add_argument("--mechanism", action="append", choices=list(MECHANISMS),
                   type=str.upper, help="repeatable; default: every SCRAM mechanism")
    a.add_argument("--iterations", type=int_at_least(4096), default=DEFAULT_ITERATIONS,
                   help=f"4096..{MAX_ITERATIONS} (default {DEFAULT_ITERATIONS})")
    a.add_argument("--data-dir", required=True)
    a.set_defaults(func=_guard(_add))
    li = sub.add_parser("list", help="users and their mechanisms")
    li.add_argument("--data-dir", required=True)
    li.add_argument("--json", action="store_true")
    li.set_defaults(func=_guard(_list))
    r = sub.add_parser("remove", help="remove a user (or some of its mechanisms)")
    r.add_argument("name")
    r.add_argument("--mechanism", action="append", choices=list(MECHANISMS), type=str.upper)
    r.add_argument("--data-dir", required=True)
    r.set_defaults(func=_guard(_remove))
