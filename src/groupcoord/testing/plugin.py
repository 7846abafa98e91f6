"""The pytest plugin of ``groupcoord.testing`` (entry point ``pytest11``, so a test suite gets
it by installing groupcoord; or ``pytest_plugins = ["groupcoord.testing.plugin"]`` in a root
conftest).

Fixtures:

- ``kafka_cluster``: a :class:`~groupcoord.testing.Cluster` started for the test (in a thread:
  any client, blocking or asyncio, can use it), stopped after it;
- ``kafka_bootstrap``: its bootstrap servers, ``"127.0.0.1:PORT"``.

The marker ``@pytest.mark.groupcoord(topics={"events": 3}, config={"key": "value"},
brokers=3)`` declares the topics created before the test runs, broker configs over the test
defaults, and how many brokers the server has.

Loading the plugin is cheap: nothing is imported from the server, and no server starts, until a
test asks for a fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from groupcoord.testing.cluster import Cluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "groupcoord(topics=None, config=None, brokers=1, racks=None): topics (name -> "
                   "partitions), broker configs and brokers of the embedded groupcoord server of "
                   "the kafka_cluster fixture")


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """An embedded groupcoord server for this test (see the module doc)."""
    from groupcoord.testing.cluster import embedded_cluster

    marker = request.node.get_closest_marker("groupcoord")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    unknown = set(kwargs) - {"topics", "config", "brokers", "racks"}
    if unknown:
        raise pytest.UsageError(f"@pytest.mark.groupcoord: unknown arguments {sorted(unknown)} "
                                f"(known: topics, config, brokers, racks)")
    with embedded_cluster(topics=kwargs.get("topics"), config=kwargs.get("config"),
                          brokers=kwargs.get("brokers", 1), racks=kwargs.get("racks")) as cluster:
        yield cluster


@pytest.fixture
def kafka_bootstrap(kafka_cluster: Cluster) -> str:
    """The embedded server's bootstrap servers (``"127.0.0.1:PORT"``)."""
    return kafka_cluster.bootstrap_servers
