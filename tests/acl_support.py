"""A server for ACL tests whose clients are principals (``test_server_acls.py``).

Until authentication exists, a test chooses its principal by its **client id**: the server runs
in this process (a thread with its own event loop) and its ``KafkaApis.handle`` is wrapped to
give each request the principal ``PRINCIPALS`` maps its client id to (``User:ANONYMOUS`` for
any other). Nothing of this is in the server: it is a test hook only. ``client_config(name)``
is the one place a test gets a client's settings, so when SASL arrives the hook goes and
``client_config`` returns SASL credentials instead (``security.protocol``, ``sasl.*``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from groupcoord.protocol.client import KafkaClient
from groupcoord.server.app import KafkaServer

from .conftest import FAST_GROUP_CONFIGS

#: client id -> principal (the test hook's whole table).
PRINCIPALS = {f"as-{n}": f"User:{n}" for n in ("admin", "alice", "bob", "carol")}

#: ACL tests run strict: a super user, and nothing allowed that no ACL allows.
STRICT = {"super.users": "User:admin", "allow.everyone.if.no.acl.found": "false",
          **dict(c.split("=", 1) for c in FAST_GROUP_CONFIGS)}


class ThreadServer:
    """A ``KafkaServer`` on its own loop in a thread, with the principal hook installed."""

    def __init__(self, data_dir: Path, properties: dict[str, str] | None = None,
                 storage: str = "sqlite") -> None:
        self.server = KafkaServer(host="127.0.0.1", port=0, data_dir=data_dir, storage=storage,
                                  properties=STRICT if properties is None else properties)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> ThreadServer:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(60)
        apis = self.server.apis
        assert apis is not None
        handle = apis.handle

        def as_principal(body: Any, ctx: Any) -> Any:
            p = PRINCIPALS.get(ctx.client_id)
            return handle(body, ctx if p is None else dataclasses.replace(ctx, principal=p))

        apis.handle = as_principal  # type: ignore[method-assign]
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap_servers

    def client_config(self, name: str) -> dict[str, str]:
        """librdkafka-style settings of a client authenticated as ``User:name``."""
        return {"bootstrap.servers": self.bootstrap, "client.id": f"as-{name}"}

    def client(self, name: str) -> KafkaClient:
        """Our own protocol client as ``User:name``."""
        return KafkaClient(self.bootstrap, client_id=self.client_config(name)["client.id"])


@contextmanager
def thread_server(data_dir: Path, properties: dict[str, str] | None = None,
                  storage: str = "sqlite") -> Iterator[ThreadServer]:
    s = ThreadServer(data_dir, properties, storage).start()
    try:
        yield s
    finally:
        s.stop()
