"""One socket write per response where the whole response is known at once.

uvicorn writes a response's head when the app sends ``http.response.start`` and its body
when it sends ``http.response.body``, and uvloop sends each write at once: two ``send``
system calls and two TCP segments per response, and a client that wakes for the head,
finds the response incomplete and sleeps until the body. The hot routes (the fast lane,
``http/layers/fast_lane.py``) have head and body in hand together, so they ask, through
the scope's ``extensions["tokserve.one_write"]``, for the next write (the head) to be
held and sent with the following one (the body), in one ``writev``.

Only a caller that sends both messages back to back asks: a held head waits for the
next write, so a streaming response (whose first chunk may come much later) never asks.
A held head is also written when the response completes (a body uvicorn does not write,
as for HEAD, still sends the head) and before the connection is closed or half-closed.

``OneWriteProtocol`` is uvicorn's httptools protocol with the transport wrapped; the
server is told to use it in ``runtime/worker.run_worker``. It relies on two things uvicorn
does: the protocol creates the request's scope in ``on_message_begin`` and writes through
``self.transport`` (set in ``connection_made``), which it hands to the request cycle.
``tests/service/test_one_write.py`` checks both against the installed uvicorn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

EXTENSION = "tokserve.one_write"


class HeldHeadTransport:
    """A transport whose next write can be held and sent with the one after it."""

    __slots__ = ("_transport", "_hold", "_held")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._hold = False
        self._held: bytes | None = None

    def hold_next_write(self) -> None:
        """Keep the next write until the one after it (or a close) sends both."""
        self._hold = True

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.writelines((held, data))
        elif self._hold:
            self._hold = False
            self._held = bytes(data)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        """Send a held write now."""
        self._hold = False
        held, self._held = self._held, None
        if held is not None:
            self._transport.write(held)

    def writelines(self, chunks: Iterable[bytes]) -> None:
        self.flush()
        self._transport.writelines(chunks)

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:  # everything else is the transport's
        return getattr(self._transport, name)


class OneWriteProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a ``HeldHeadTransport``; each request's scope
    offers the hold as ``extensions["tokserve.one_write"]``."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._held_head = HeldHeadTransport(transport)
        self._hold_next: Callable[[], None] = self._held_head.hold_next_write
        super().connection_made(self._held_head)  # type: ignore[arg-type]

    def on_response_complete(self) -> None:
        self._held_head.flush()  # a head whose body write never came (none is held here
        super().on_response_complete()  # when callers keep to the rule above)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {EXTENSION: self._hold_next}  # type: ignore[typeddict-unknown-key]
