"""``bench connections`` (``benchmarks/connections.py``): runs with quick sizes and reports,
for each listener kind, the server's RSS per idle connection and a second wave's growth, with
the raw RSS readings; no figure asserted beyond its shape (the lead takes quiet figures)."""

from __future__ import annotations

import json
import math
import sys

import pytest
from benchmarks import connections

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_quick_shape() -> None:
    results = connections.run(quick=True, kinds="plaintext,tls")
    assert [r.name for r in results] == [
        "connections.plaintext.rss_per_connection", "connections.plaintext.second_wave_growth",
        "connections.tls.rss_per_connection", "connections.tls.second_wave_growth"]
    for r in results:
        assert math.isfinite(r.value) and r.value >= 0, r
        assert r.params["connections"] == 50
        assert r.params["rss_first_wave_kib"] >= r.params["rss0_kib"] > 0
        json.dumps(r.as_json())


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="kinds: unknown 'kerberos'"):
        connections.run(quick=True, kinds="kerberos")
