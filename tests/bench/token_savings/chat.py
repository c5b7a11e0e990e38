"""What a chat API is sent, in tokens: tool definitions (name, description, input schema: no outputSchema, which
no chat API sends), the system prompt, and every message, tool results as the raw text a client shows the model.

Tokens are o200k_base (bpe-openai, offline: tiktoken's encodings need a download). Each message also pays a fixed
overhead for its role and delimiters, as chat formats do.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from gateway.tools.catalog import count_text_tokens, count_tokens
from tests.bench.token_savings.accounting import Block, ModelCall

MESSAGE_OVERHEAD = 4
Message = dict[str, Any]


def _key(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def tool_name(name: str) -> str:
    """`server/tool` as a chat API accepts a function name (`^[a-zA-Z0-9_-]{1,64}$`)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name.replace("/", "__"))[:64]


def tool_definition(name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
    """One tool as a chat API is sent it."""
    return {"name": tool_name(name), "description": description, "input_schema": input_schema}


def message_tokens(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD
    if isinstance(message.get("content"), str):
        tokens += count_text_tokens(message["content"])
    for call in message.get("tool_calls") or []:
        tokens += MESSAGE_OVERHEAD + count_text_tokens(call["function"]["name"])
        tokens += count_text_tokens(call["function"]["arguments"])
    return tokens


def model_call(
    tools: list[dict[str, Any]], messages: list[Message], answer: Message, thread: str = "agent"
) -> ModelCall:
    """A call's input blocks in caching order: the tool definitions (one block), then each message."""
    blocks = [Block(_key(tools), count_tokens(tools))] if tools else []
    blocks += [Block(_key(m), message_tokens(m)) for m in messages]
    return ModelCall(tuple(blocks), Block(_key(answer), message_tokens(answer)), thread)


def with_preamble(messages: list[Message], preamble: str, system: str | None = None) -> list[Message]:
    """`messages` with the shared agent preamble leading the system prompt (`system` replaces its text when given,
    e.g. an earlier runtime description), or as the system prompt when there is none."""
    if messages and messages[0].get("role") == "system":
        text = messages[0]["content"] if system is None else system
        return [{"role": "system", "content": f"{preamble}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": preamble}, *messages]
