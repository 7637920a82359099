"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers.

uvicorn closes a kept-alive connection that sits idle (``timeout_keep_alive``) but waits
for ever on one whose request line or headers never finish: 800 connections that each
sent half a header were held 30 s and more. Here a connection must deliver a complete
head within ``HEADER_SECONDS`` of its first byte of a request (or of opening), or it is
closed; a body, and the answer, are not timed by this (a streamed run may take minutes).
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 10.0


class HeadTimedH11(H11Protocol):
    header_seconds = HEADER_SECONDS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._arm()

    def _waiting_for_a_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.header_seconds, self._expired)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _expired(self) -> None:
        self._head_deadline = None
        if self._waiting_for_a_head() and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting_for_a_head():
            self._arm()  # the next request's head has begun: it has its deadline
        else:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._disarm()  # idle again: uvicorn's keep-alive timeout takes over

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
