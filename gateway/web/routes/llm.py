"""`/v1/llm/chat/completions`: the LLM proxy, its answer as JSON or, with `stream: true`, as server-sent events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from gateway.core import GatewayCore
from gateway.llm import stream
from gateway.llm.proxy import ChatCompletionRequest, ChatCompletionResponse
from gateway.web.auth import Caller
from gateway.web.error_responses import ERROR_RESPONSES

_EVENT_STREAM_TYPE = "text/event-stream"
# The 200 of a `stream: true` request, next to the JSON answer FastAPI documents from the response model.
_EVENT_STREAM: dict[str, Any] = {
    "description": "A chat completion; with `stream: true`, `data: {chat.completion.chunk}` events, then "
    "`data: [DONE]`",
    "content": {_EVENT_STREAM_TYPE: {"schema": {"type": "string"}}},
}


def router(core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    @routes.post(
        "/v1/llm/chat/completions",
        responses={**ERROR_RESPONSES, 200: _EVENT_STREAM},
        response_model=ChatCompletionResponse,
        response_model_exclude_none=True,
    )
    async def chat_completions(
        ctx: Caller, request: ChatCompletionRequest
    ) -> ChatCompletionResponse | StreamingResponse:
        answer = await core.llm.complete(ctx, request)
        if not request.stream:
            return answer
        include_usage = request.stream_options is not None and request.stream_options.include_usage
        return StreamingResponse(stream.replay(stream.events(answer, include_usage)), media_type=_EVENT_STREAM_TYPE)

    return routes
