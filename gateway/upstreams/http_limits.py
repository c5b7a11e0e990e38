"""A size limit on the answers of streamable-HTTP MCP servers, as `bounded_stdio` has for stdio ones.

An answer comes as one server-sent event (bounded by the SDK's `max_sse_event_size`) or as a JSON body, which
the SDK reads whole: here its bytes are counted as they arrive, and reading stops past the limit. The SDK then
fails only that request, as it does for a body it cannot read.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError

from gateway.upstreams.stdio import MESSAGE_TOO_LARGE

_JSON_BODY_TOO_LARGE = "JSON answer over the gateway's limit"
# How the SDK fails a request whose answer a transport dropped for its size: its own SSE event limit (httpx2's
# SSEError), the JSON body cut off below, or bounded_stdio.
_DROPPED_FOR_SIZE = re.compile(rf"Server-sent event exceeded the \d+ byte limit|{re.escape(_JSON_BODY_TOO_LARGE)}")


def dropped_for_size(exc: MCPError) -> bool:
    """Whether this request failed because its answer was over the limit (the connection itself is fine)."""
    if exc.code == MESSAGE_TOO_LARGE:
        return True
    return exc.code in (types.CONNECTION_CLOSED, types.PARSE_ERROR) and bool(_DROPPED_FOR_SIZE.search(exc.message))


class _Counted(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._stream:
            received += len(chunk)
            if received > self._limit:
                # The error the SDK turns into a failure of this one request (a body it could not read).
                raise httpx2.StreamError(f"{_JSON_BODY_TOO_LARGE} of {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


def bound_json_answers(client: httpx2.AsyncClient, limit: int) -> None:
    """Count every JSON body `client` receives (as sent: the gateway asks for no content encoding)."""

    async def count(response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _Counted(response.stream, limit)

    client.headers["Accept-Encoding"] = "identity"
    client.event_hooks["response"].append(count)
