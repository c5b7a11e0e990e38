"""The `Mcpexec-Vault` headers of the sandbox API (gateway/pii/vault_marks.py): the caller's mark in, the chain its
request's vault calls saw out, on every answer those calls touched (tool results, LLM answers streamed or not,
errors). A pure ASGI middleware, so that no route need know of it."""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import InvalidVaultMarks
from gateway.pii.vault_marks import HEADER, Mark, VaultView, viewing

_HEADER_KEY = HEADER.lower().encode("latin-1")


class VaultMarks:
    def __init__(self, app: ASGIApp, count_error: Callable[[str], None]) -> None:
        """`count_error` counts a refused header by its error code, as the app's error handlers count theirs."""
        self.app = app
        self._count_error = count_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = [value for key, value in scope["headers"] if key == _HEADER_KEY]
        try:
            if len(sent) > 1:
                raise InvalidVaultMarks(f"one {HEADER} header at most")
            view = VaultView(Mark.parse(sent[0].decode("latin-1") if sent else None))
        except InvalidVaultMarks as exc:
            self._count_error(exc.code)
            await JSONResponse(exc.response().model_dump(), status_code=exc.status)(scope, receive, send)
            return

        async def send_marks(message: Message) -> None:
            if message["type"] == "http.response.start" and (answer := view.answer()) is not None:
                MutableHeaders(scope=message).append(HEADER, answer)
            await send(message)

        with viewing(view):
            await self.app(scope, receive, send_marks)
