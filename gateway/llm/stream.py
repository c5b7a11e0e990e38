"""A finished chat completion as OpenAI `chat.completion.chunk` Server-Sent Events, for clients sending `stream: true`.

The upstream's own stream is never relayed: a PII entity can be cut across its chunks, where no detector sees it,
so the gateway fetches and tokenizes the answer whole (gateway/llm.py) and only then cuts it into the events an
OpenAI streaming client expects: per choice, one chunk with the whole message and one with its finish reason, then
the usage chunk if asked for, then `[DONE]`. The events are built before the first byte is sent, so a bad answer is
still a plain JSON error.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from gateway.errors import UpstreamError
from gateway.llm.proxy import ChatCompletionResponse, CompletionUsage

DONE = b"data: [DONE]\n\n"


def _none(value: object) -> bool:
    return value is None


class FunctionCall(BaseModel):
    name: str
    arguments: str


class ToolCall(BaseModel):
    id: str
    type: str = "function"
    function: FunctionCall


class AnswerMessage(BaseModel):
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)


class AnswerChoice(BaseModel):
    """What a chunk needs of one of the answer's choices (they are kept as plain JSON for the tokenizer)."""

    index: int = 0
    message: AnswerMessage
    finish_reason: str | None = None


class ToolCallDelta(ToolCall):
    index: int


class ChunkDelta(BaseModel):
    """Fields left out when unset, as OpenAI does: the finish chunk's delta is `{}`."""

    role: Literal["assistant"] | None = Field(default=None, exclude_if=_none)
    content: str | None = Field(default=None, exclude_if=_none)
    tool_calls: list[ToolCallDelta] | None = Field(default=None, exclude_if=_none)


class ChunkChoice(BaseModel):
    index: int
    delta: ChunkDelta
    finish_reason: str | None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = Field(default=None, exclude_if=_none)


def chunks(answer: ChatCompletionResponse, include_usage: bool) -> list[ChatCompletionChunk]:
    """The chunks OpenAI would have streamed for `answer`; the usage chunk only if asked for and the upstream told.

    Raises UpstreamError for a choice without an assistant message, as the JSON path would for a non-completion.
    """
    try:
        choices = [AnswerChoice.model_validate(choice) for choice in answer.choices]
    except ValidationError:
        raise UpstreamError("LLM upstream sent a choice that is not an assistant message") from None
    head = ChatCompletionChunk(
        id=answer.id or f"chatcmpl-{uuid.uuid4().hex}",
        created=answer.created or int(time.time()),
        model=answer.model or "",
        choices=[],
    )
    out: list[ChatCompletionChunk] = []
    for choice in choices:
        calls = [
            ToolCallDelta(index=i, id=call.id, type=call.type, function=call.function)
            for i, call in enumerate(choice.message.tool_calls)
        ]
        delta = ChunkDelta(role="assistant", content=choice.message.content or "", tool_calls=calls or None)
        whole = ChunkChoice(index=choice.index, delta=delta, finish_reason=None)
        finish = ChunkChoice(index=choice.index, delta=ChunkDelta(), finish_reason=choice.finish_reason)
        out += [head.model_copy(update={"choices": [whole]}), head.model_copy(update={"choices": [finish]})]
    if include_usage and answer.usage is not None:
        out.append(head.model_copy(update={"usage": answer.usage}))
    return out


def events(answer: ChatCompletionResponse, include_usage: bool) -> list[bytes]:
    """The whole event stream for `answer`, ready to send."""
    return [b"data: " + chunk.model_dump_json().encode() + b"\n\n" for chunk in chunks(answer, include_usage)] + [DONE]


async def replay(prepared: list[bytes]) -> AsyncIterator[bytes]:
    """The prepared events as an async iterator: Starlette would hand each item of a plain list to a thread."""
    for event in prepared:
        yield event
