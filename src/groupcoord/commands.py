"""The registry of ``groupcoord`` sub-commands: each layer's CLI module registers its own with
:func:`command`, and :mod:`groupcoord.cli` builds the parser from :data:`COMMANDS`.

A module of its own so that there is one registry however the CLI is started: ``python -m
groupcoord.cli`` runs ``cli.py`` as ``__main__``, a second copy of ``groupcoord.cli``; commands
registered on that copy's globals were invisible to the other.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

Command = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad command-line input found after parsing: ``groupcoord`` prints ``error: MESSAGE``
    (one line) and exits with status 2, as argparse does for what it checks itself."""
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Command, str]] = {}


def command(name: str, help: str) -> Callable[[Callable[[argparse.ArgumentParser], None]],
                                               Callable[[argparse.ArgumentParser], None]]:
    """Register a subcommand: decorate the function that adds its arguments; it must set
    ``func`` through ``parser.set_defaults(func=...)``."""

    AddArgs = Callable[[argparse.ArgumentParser], None]

    def deco(add_args: AddArgs) -> AddArgs:
        COMMANDS[name] = (add_args, lambda ns: int(ns.func(ns)), help)
        return add_args

    return deco


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for an integer option of at least ``minimum``: a bad value is one
    line naming the option (argparse adds it), never a traceback."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def bootstrap_servers(text: str) -> str:
    """An argparse ``type`` for ``--bootstrap-server``: ``HOST:PORT[,HOST:PORT...]`` with
    ports 1..65535, checked before anything connects (bad usage: exit status 2)."""
    for entry in text.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            raise argparse.ArgumentTypeError(f"expected HOST:PORT[,HOST:PORT...] with a port in "
                                             f"1..65535, got {text!r}")
    return text


def command_config(text: str) -> dict[str, Any]:
    """An argparse ``type`` for ``--command-config FILE``: a Kafka client properties file (as
    ``kafka-acls.sh --command-config``) read into the protocol client's security options
    (``protocol/client_config.py``); a file that cannot be used is bad usage (status 2)."""
    from groupcoord.protocol.client_config import ClientConfigError, client_options, read_properties

    try:
        return client_options(read_properties(text), source=text)
    except ClientConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_command_config(p: argparse.ArgumentParser) -> None:
    """``--command-config FILE`` for a command that talks to a server (SSL, SASL_PLAINTEXT,
    SASL_SSL listeners, docs/security.md)."""
    p.add_argument("--command-config", type=command_config, default={}, metavar="FILE",
                   help="client properties for a secured listener, as Kafka's tools take them: "
                        "security.protocol, sasl.mechanism, sasl.jaas.config (or "
                        "sasl.username/sasl.password), ssl.truststore.location (PEM)...")


def output_dir(text: str) -> str:
    """An argparse ``type`` for a directory to write into: refused if it exists and is not a
    directory (found before any work starts)."""
    import os

    if not text or (os.path.exists(text) and not os.path.isdir(text)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return text


def int_between(minimum: int, maximum: int) -> Callable[[str], int]:
    """:func:`int_at_least` with an upper bound too (a size that would exhaust memory or run
    for ever is refused in one line, not attempted)."""
    at_least = int_at_least(minimum)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {value}")
        return value

    return parse
