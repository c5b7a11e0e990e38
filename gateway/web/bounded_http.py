"""uvicorn's httptools protocol with the limits it lacks, for a port every task pod can reach.

uvicorn buffers an unfinished request head with no size bound and no deadline, before any token is checked: 150
connections trickling 4 MiB headers held 800 MB. Here a request head is bounded in bytes (431) and in time
from the connection's start or the previous response (408), a peer holds a bounded number of connections and
the server a bounded total (503), each refused with its status and closed (after a short linger, so the refusal
is read, not lost to a reset). The parser, the ASGI cycle
and keep-alive stay uvicorn's own (measured: httptools costs 0.2 ms less gateway CPU per call than h11).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

# Far above any honest request head (nginx: 4 x 8 KiB by default; uvicorn's h11: 16 KiB).
MAX_HEAD_BYTES = 64 * 1024
# From the connection's start (or the end of the previous response) to the end of the next request head.
HEAD_SECONDS = 10.0
# A task pod is one peer; its runtime needs a handful. Loopback benchmarks open a few hundred.
MAX_CONNECTIONS_PER_PEER = 256
MAX_CONNECTIONS = 4096
# After a refusal, what the peer still sends is read and dropped for at most this long, then the connection is
# closed: closing with unread bytes makes the kernel reset it, and the reset can reach the peer before the refusal
# it was meant to read (nginx's lingering close, for the same reason). A peer that closes its side ends it sooner.
LINGER_SECONDS = 2.0


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    # Open connections per peer address, per server (the ServerState is one per uvicorn server).
    _per_peer: dict[int, Counter[str]] = {}  # noqa: RUF012 - shared on purpose, keyed by server

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._peer: str | None = None
        self._head_bytes: int | None = 0  # None once the current request's head is complete
        self._head_timer: asyncio.TimerHandle | None = None
        self._request_read = True  # no request in progress
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = self.client[0] if self.client else ""
        peers = self._per_peer.setdefault(id(self.server_state), Counter())
        if len(self.connections) > MAX_CONNECTIONS:
            self._refuse(503, "too many connections")
            return
        if peers[peer] >= MAX_CONNECTIONS_PER_PEER:
            self._refuse(503, "too many connections from this address")
            return
        peers[peer] += 1
        self._peer = peer
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        if self._peer is not None:
            peers = self._per_peer[id(self.server_state)]
            peers[self._peer] -= 1
            if peers[self._peer] <= 0:
                del peers[self._peer]
            self._peer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:  # lingering: dropped unread
            return
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        # Checked after parsing: a chunk that completed the head is fine, whatever body came with it.
        if self._head_bytes is not None and self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self._refuse(431, f"request head over {MAX_HEAD_BYTES} bytes")

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._stop_head_timer()
        super().on_headers_complete()

    def on_message_begin(self) -> None:
        self._request_read = False
        super().on_message_begin()

    def on_message_complete(self) -> None:
        # The next bytes are the next request's head; it may only be waited for once this one is answered (an
        # early answer, e.g. 413 to an upload still arriving, comes before the rest of the body is read).
        self._request_read = True
        self._head_bytes = 0
        super().on_message_complete()
        if self.cycle is None or self.cycle.response_complete:
            self._await_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._request_read and not self.transport.is_closing():
            self._await_head()

    def _await_head(self) -> None:
        """Counts the next request head's bytes and time: from now until its headers are complete."""
        self._head_bytes = 0
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._head_bytes is not None and not self._refused and not self.transport.is_closing():
            self._refuse(408, f"no complete request head within {HEAD_SECONDS:g} s")

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, status: int, message: str) -> None:
        body = message.encode()
        head = b"content-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
        self.transport.write(STATUS_LINE[status] + head + b"content-length: %d\r\n\r\n" % len(body) + body)
        self._refused = True
        self._stop_head_timer()
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)
