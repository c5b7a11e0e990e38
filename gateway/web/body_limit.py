"""A cap on request bodies: no sandbox can make the gateway, which every task shares, buffer an unbounded upload.

FastAPI's own `max_body_size` (Starlette's RequestBodyLimitMiddleware) counts the same way, but answers any
request whose Content-Length is over the limit with a plain-text 413, replacing whatever the app answered: outside
the gateway's error contract (`{"error": {"code", "message"}}`, docs/contracts.md).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(HTTPException):
    """Starlette's HTTP exception, because FastAPI's body parsing passes those on and turns anything else into a
    400; the app answers it as `request_too_large`."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over the gateway's limit of {limit} bytes")


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


class BodyLimit:
    """Refuses a body whose Content-Length is over `max_bytes` before reading any of it, and stops reading one sent
    without (chunked) as soon as it passes `max_bytes`: at most `max_bytes` of a request is ever held."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        received = 0

        async def limited() -> Message:
            nonlocal received
            if declared is not None and declared > self.max_bytes:
                raise BodyTooLarge(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, limited, send)
