"""Chat completions proxy: the sandbox sends OpenAI-shaped requests, the gateway adds the key.

The upstream is OpenAI-compatible, or Anthropic's Messages API (translated in gateway/llm_anthropic.py).

Messages are tokenized on the way up (whatever the sandbox put in them) and the answer on the way down,
so neither the model nor the sandbox sees raw PII. An answer is tokenized whole (an entity can span any cut), so
`stream: true` is fetched whole from the upstream too and only then sent as events (gateway/llm_stream.py).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from gateway.context import TaskContext
from gateway.errors import GatewayError, InvalidArguments, LLMUnavailable, UpstreamError
from gateway.llm.anthropic import API_VERSION, MessagesResponse, to_chat_completion, to_messages_request
from gateway.pii.tokenizer import PiiTokenizer
from gateway.settings import LLMUpstream
from gateway.telemetry import audit
from gateway.telemetry.metrics import GatewayMetrics
from gateway.usage import UsageMeter


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """The OpenAI request body; fields the gateway does not use are passed through untouched (not `stream_options`)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None


class CompletionUsage(BaseModel):
    model_config = ConfigDict(extra="allow")

    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatCompletionResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    created: int | None = None
    model: str | None = None
    choices: list[dict[str, Any]] = Field(default_factory=list)
    usage: CompletionUsage | None = None


class LLMProxy:
    def __init__(
        self, upstream: LLMUpstream | None, tokenizer: PiiTokenizer, usage: UsageMeter, metrics: GatewayMetrics
    ) -> None:
        self._upstream = upstream
        self._tokenizer = tokenizer
        self._usage = usage
        self._metrics = metrics
        self._http = httpx.AsyncClient(timeout=upstream.timeout_seconds if upstream else 60.0)

    async def complete(self, ctx: TaskContext, request: ChatCompletionRequest) -> ChatCompletionResponse:
        if self._upstream is None:
            raise LLMUnavailable("no LLM upstream is configured for this gateway")
        model = request.model or ctx.task.spec.model or self._upstream.default_model
        if model is None:
            raise InvalidArguments("no model: set it in the request, the task's spec.model, or the gateway")
        # The upstream never streams (see the module docstring), and OpenAI refuses stream_options without it.
        body = request.model_dump(exclude_none=True, exclude={"stream_options"}) | {"model": model, "stream": False}
        body["messages"] = await self._tokenizer.tokenize(ctx, body["messages"])
        started = time.perf_counter()
        outcome = "ok"
        try:
            answer = await self._post(body)
        except GatewayError as exc:
            outcome = exc.code
            raise
        finally:
            self._metrics.llm_requests.labels(outcome).inc()
            audit.record(ctx, "llm", model, time.perf_counter() - started, outcome)
        answer.choices = await self._tokenizer.tokenize(ctx, answer.choices)
        usage = self._usage.of(ctx.scope)
        usage.llm_turns += 1
        if answer.usage is not None:
            usage.tokens_in += answer.usage.prompt_tokens
            usage.tokens_out += answer.usage.completion_tokens
            self._metrics.llm_tokens.labels("in").inc(answer.usage.prompt_tokens)
            self._metrics.llm_tokens.labels("out").inc(answer.usage.completion_tokens)
        return answer

    async def _post(self, body: dict[str, Any]) -> ChatCompletionResponse:
        upstream = self._upstream
        assert upstream is not None
        key = upstream.api_key.get_secret_value()
        base = upstream.base_url.rstrip("/")
        if upstream.api == "anthropic":
            answer = await self._send(
                base + "/v1/messages", to_messages_request(body), {"x-api-key": key, "anthropic-version": API_VERSION}
            )
            try:
                message = MessagesResponse.model_validate(answer)
            except ValueError:
                raise UpstreamError("LLM upstream sent an answer that is not a Messages API message") from None
            return ChatCompletionResponse.model_validate(to_chat_completion(message))
        answer = await self._send(base + "/chat/completions", body, {"Authorization": f"Bearer {key}"})
        try:
            return ChatCompletionResponse.model_validate(answer)
        except ValueError:
            raise UpstreamError("LLM upstream sent an answer that is not a chat completion") from None

    async def _send(self, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        try:
            response = await self._http.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"LLM upstream unreachable: {type(exc).__name__}") from None
        if response.status_code != 200:
            raise UpstreamError(f"LLM upstream answered {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise UpstreamError("LLM upstream sent an answer that is not JSON") from None

    async def close(self) -> None:
        await self._http.aclose()
