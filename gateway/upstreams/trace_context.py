"""The trace context an upstream MCP server is given with each call, when tracing is on: in the request's
`params._meta.traceparent` (SEP-414, any transport), and for a streamable-HTTP server also as the W3C `traceparent`
HTTP header, which the HTTP tooling in front of a server (proxies, meshes, its own instrumentation) reads.

The SDK writes requests from a task of its own, where the caller's context is not current: the header is taken from
the request's own `_meta`, so the two never disagree.
"""

from __future__ import annotations

import re
from typing import cast

import httpx2
import mcp_types as types

from mcpexec import tracing
from runtime.contract import TRACEPARENT_HEADER

_META_TRACEPARENT = re.compile(rb'"traceparent"\s*:\s*"(00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2})"')


def trace_meta() -> types.RequestParamsMeta | None:
    """The `_meta` carrying the current span's context (None: tracing off, nothing is added)."""
    traceparent = tracing.current_traceparent()
    return None if traceparent is None else cast(types.RequestParamsMeta, {TRACEPARENT_HEADER: traceparent})


def send_trace_headers(client: httpx2.AsyncClient) -> None:
    """Give each request whose `_meta` carries a traceparent the same as its header (added only when tracing is on)."""

    async def header(request: httpx2.Request) -> None:
        match = _META_TRACEPARENT.search(request.content)
        if match is not None:
            request.headers[TRACEPARENT_HEADER] = match.group(1).decode()

    client.event_hooks["request"].append(header)
