"""Chat completions proxy: the sandbox sends OpenAI-shaped requests, the gateway adds the key.

The upstream is OpenAI-compatible, or Anthropic's Messages API (translated in gateway/llm_anthropic.py).

Messages are tokenized on the way up (whatever the sandbox put in them) and the answer on the way down,
so neither the model nor the sandbox sees raw PII. An answer is tokenized whole (an entity can span any cut), so
`stream: true` is fetched whole from the upstream too and only then sent as events (gateway/llm_stream.py).

The sandbox (its code, its model) is hostile and spends the operator's money, so both ways are allow-lists: a
request is only the fields below (anything else is a 422), asks for one choice and at most the gateway's
`max_tokens`, and runs the model the task and the gateway set, never one it names; the answer is only the fields
of `ChatCompletionResponse`, all tokenized.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, computed_field

from gateway.context import TaskContext
from gateway.errors import Forbidden, GatewayError, InvalidArguments, LLMUnavailable, UpstreamError
from gateway.llm.anthropic import API_VERSION, MessagesResponse, to_chat_completion, to_messages_request
from gateway.pii.tokenizer import PiiTokenizer
from gateway.settings import LLMUpstream
from gateway.telemetry import audit
from gateway.telemetry.metrics import GatewayMetrics
from gateway.usage import UsageMeter
from mcpexec import tracing


class ChatMessage(BaseModel):
    """One message: all of it is tokenized on the way up, so its other fields (tool calls, names) pass as sent."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class FunctionDefinition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDefinition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["function"]
    function: FunctionDefinition


class FunctionName(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str


class NamedToolChoice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["function"]
    function: FunctionName


class ChatCompletionRequest(BaseModel):
    """The OpenAI request body, the fields the gateway lets through: any other is refused (422). `n` may only be 1;
    `max_tokens`/`max_completion_tokens` are bounded by the gateway (LLMUpstream.max_tokens); `model` may only
    name the model the task runs (LLMProxy.complete). `stream` and `stream_options` are the gateway's own."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: Literal[1] | None = None
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    max_completion_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2, le=2)] | None = None
    frequency_penalty: Annotated[float, Field(ge=-2, le=2)] | None = None
    seed: int | None = None
    stop: str | Annotated[list[str], Field(max_length=4)] | None = None
    tools: list[ToolDefinition] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None


class CompletionUsage(BaseModel):
    """The token counts; an upstream's other usage details are dropped."""

    prompt_tokens: Annotated[int, Field(ge=0)] = 0
    completion_tokens: Annotated[int, Field(ge=0)] = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ChatCompletionResponse(BaseModel):
    """The answer the sandbox gets: these fields only (an upstream's others, such as `system_fingerprint` or a
    provider's own, are dropped: pydantic ignores them), every string in them tokenized."""

    id: str | None = None
    object: Literal["chat.completion"] = "chat.completion"
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
        """The upstream's answer to `request`, tokenized. The model is the task's `spec.model`, else the gateway's
        default: a request may leave `model` out or name that one, any other is refused (403), so the sandbox never
        picks what the operator pays for. Asking for more than the gateway's `max_tokens` is refused (422)."""
        upstream = self._upstream
        if upstream is None:
            raise LLMUnavailable("no LLM upstream is configured for this gateway")
        model = ctx.task.spec.model or upstream.default_model
        if model is None:
            raise LLMUnavailable("no model: the task sets no spec.model and the gateway no default model")
        if request.model is not None and request.model != model:
            raise Forbidden(f"this task's model is {model!r}: a request may not name another")
        for name, asked in (
            ("max_tokens", request.max_tokens),
            ("max_completion_tokens", request.max_completion_tokens),
        ):
            if asked is not None and asked > upstream.max_tokens:
                raise InvalidArguments(f"{name} {asked} is over this gateway's limit of {upstream.max_tokens}")
        # All the sandbox sends up is tokenized (stop sequences and tool definitions are text too). The upstream
        # never streams (see the module docstring), and OpenAI refuses stream_options without it.
        sent = request.model_dump(exclude_none=True, exclude={"model", "stream", "stream_options"})
        body = await self._tokenizer.tokenize(ctx, sent) | {"model": model, "stream": False}
        started = time.perf_counter()
        outcome = "ok"
        try:
            with tracing.span("gateway.llm_call", {"mcpexec.llm.model": model, "mcpexec.llm.api": upstream.api}):
                answer = await self._post(body)
        except GatewayError as exc:
            outcome = exc.code
            raise
        finally:
            self._metrics.llm_requests.labels(outcome).inc()
            audit.record(ctx, "llm", model, time.perf_counter() - started, outcome)
        answer = ChatCompletionResponse.model_validate(
            await self._tokenizer.tokenize(ctx, answer.model_dump(exclude_none=True))
        )
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
                base + "/v1/messages",
                to_messages_request(body, upstream.max_tokens),
                {"x-api-key": key, "anthropic-version": API_VERSION},
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
