"""``bench server --security tls-scram``: the loopback heartbeat benchmark over a SASL_SSL
listener (TLS + SCRAM-SHA-512) runs (quick sizes) and names its figures apart from plaintext's;
no timing asserted."""

from __future__ import annotations

import json
import math

import pytest
from benchmarks import server

from groupcoord.cli import main


def test_tls_scram_quick_shape() -> None:
    results = server.run(quick=True, security="tls-scram")
    names = {r.name for r in results}
    assert "heartbeats.tls-scram.steady.members=200.groups=2" in names
    assert all(n.startswith("heartbeats.tls-scram.") for n in names)
    for r in results:
        assert r.params["security"] == "tls-scram"
        assert math.isfinite(r.value) and r.value > 0, r
        json.dumps(r.as_json())


def test_security_option_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "server", "--security", "kerberos"]) == 2
    assert capsys.readouterr().err == ("error: --security must be one of plaintext, tls-scram, "
                                       "both, got 'kerberos'\n")
    assert main(["bench", "heartbeats", "--security", "tls-scram"]) == 2
    assert capsys.readouterr().err == "error: benchmark heartbeats has no --security option\n"
