"""One TCP connection per upstream streamable-HTTP server connection, not one per call.

The SDK closes a call's server-sent-event answer as soon as the JSON-RPC response event arrives, before the
body's end (python-sdk#2707). httpcore can then not hand the connection back to its pool and closes it: every
call paid a new TCP (and, to an https server, TLS) connection on both sides, and left a TIME_WAIT socket behind
(about 700 a second under load, against a 28,000-port range). Reading what is left of the body first, which after
a complete answer is only its end (already on its way), lets the connection serve the next call. The caller does
not wait for it: the SDK has delivered the answer before it closes the stream. Whatever does not end promptly
and briefly is closed as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import httpx2

DRAIN_SECONDS = 0.5
DRAIN_MAX_BYTES = 64 * 1024


class _DrainedOnClose(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            # A failed drain only costs the connection, as before; it must not raise: the SDK would take a failed
            # close for a lost stream and resume it.
            with anyio.move_on_after(DRAIN_SECONDS), contextlib.suppress(httpx2.HTTPError, httpx2.StreamError):
                left = DRAIN_MAX_BYTES
                async for chunk in self._stream:
                    left -= len(chunk)
                    if left < 0:
                        break
        finally:
            await self._stream.aclose()


def reuse_connections(client: httpx2.AsyncClient) -> None:
    """Drain each event-stream answer when the SDK closes it, so `client` keeps the connection. (The
    connection's listen stream is only closed when the connection ends, by cancellation, which the drain does not
    outlast.)"""

    async def drain_on_close(response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _DrainedOnClose(response.stream)

    client.event_hooks["response"].append(drain_on_close)
