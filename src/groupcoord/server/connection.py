"""A client connection as the layers around the request pipeline see it: what a frame handler
returns (:data:`Outcome`, :class:`Close`), the frame handler's type, and the connection's
attributes that authentication (``server/security/``) and the control plane
(``server/control.py``) read and set. ``server/app.py``'s ``Connection`` is the one
implementation; these live below it so that those layers need not import the server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Close", "FrameHandler", "Later", "Outcome", "ServedConnection"]


@dataclass(slots=True, frozen=True)
class Close:
    """Dispatch outcome: close the connection (after the responses already produced, then
    ``response`` if any: a SASL failure is answered before the close)."""

    reason: str
    response: bytes = b""


@dataclass(slots=True, frozen=True)
class Later:
    """Dispatch outcome: a response that is not ready yet (a long-poll Fetch or ShareFetch, a
    JoinGroup the coordinator answers later, an injected latency). The connection runs
    ``wait`` as its request's task itself and hands the finished task to ``finish``, which
    builds the response frame (or a Close, or None) from its result or its exception.

    ``wait`` is the task's own coroutine (or a future, run as it is), never an argument of
    another one: a connection closed before the task's first step cancels it, and a task
    cancelled before it starts closes its coroutine, whereas a coroutine passed to a wrapper
    that never starts is dropped without being awaited (a RuntimeWarning, and its cleanup never
    runs). What must be undone even then (a request the coordinator holds) is a future whose
    cancel undoes it."""

    wait: Coroutine[Any, Any, Any] | asyncio.Future[Any]
    finish: Callable[[asyncio.Future[Any]], bytes | Close | None]


Outcome = bytes | Close | Later | None

#: Handles one request frame of a connection (the frame, the connection): the server's
#: dispatch, or a SASL session's until the client has authenticated. The connection is typed
#: ``Any`` here: the server's dispatch takes its own connection class, a SASL session any
#: :class:`ServedConnection`.
FrameHandler = Callable[[bytes, Any], Outcome]


class ServedConnection(Protocol):
    """A client connection: who it is, where it came in, how to answer and close it."""

    #: "host:port" of the client.
    peer: str
    #: The authenticated principal ("User:NAME"), set by authentication.
    principal: str
    #: The client id of the last request (control: drop-connections).
    client_id: str
    #: The listener it came in on, and the broker (node id) it reached.
    listener: str
    broker: int
    transport: asyncio.Transport | None
    handler: FrameHandler

    def close(self, reason: str) -> None: ...

    def answer(self, data: bytes) -> None:
        """Write ``data`` outside the request loop, in order behind the answers held for a
        pending group commit (a close sends what is held first)."""

    def limit_frames(self, max_frame_size: int | None) -> None:
        """The largest request frame the connection takes from now on; None: the server's
        ``socket.request.max.bytes``."""

    def abort(self) -> None: ...
