"""OpenAI chat completions <-> Anthropic Messages API, so sandboxes speak one API whatever the upstream is.

Only what a code-writing agent uses is translated: text messages (system prompts become `system`),
max_tokens, temperature, top_p and stop. Images and tools are refused with a clear 422 rather than silently
dropped; the other fields the proxy lets through are not sent (the Messages API rejects unknown fields).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.errors import InvalidArguments

API_VERSION = "2023-06-01"
# The Messages API requires max_tokens; OpenAI's default is "as many as fit". Every Claude model allows this many.
DEFAULT_MAX_TOKENS = 4096
_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}
_UNSUPPORTED = ("tools", "tool_choice")


class ContentBlock(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class MessagesUsage(BaseModel):
    model_config = ConfigDict(extra="allow")

    input_tokens: int = 0
    output_tokens: int = 0


class MessagesResponse(BaseModel):
    """The Messages API answer (https://docs.anthropic.com/en/api/messages), the fields the gateway reads."""

    model_config = ConfigDict(extra="allow")

    type: Literal["message"]
    model: str
    content: list[ContentBlock] = Field(default_factory=list)
    stop_reason: str | None = None
    usage: MessagesUsage = Field(default_factory=MessagesUsage)


def _text(content: Any) -> str:
    """A message's text: a string, or OpenAI content parts of type text (anything else is refused)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if part.get("type") != "text":
            raise InvalidArguments(f"content parts of type {part.get('type')!r} are not supported with this model")
        parts.append(str(part.get("text", "")))
    return "".join(parts)


def to_messages_request(body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """An OpenAI chat completion request body (as the proxy let it through) as a Messages API body; consecutive
    turns of one role merge. A body asking no max_tokens gets the default, or the gateway's `max_tokens` if lower."""
    if refused := [name for name in _UNSUPPORTED if name in body]:
        raise InvalidArguments(f"not supported with this model: {', '.join(refused)}")
    system: list[str] = []
    turns: list[dict[str, str]] = []
    for message in body["messages"]:
        role, text = message["role"], _text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role in ("user", "assistant"):
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"] += "\n\n" + text
            else:
                turns.append({"role": role, "content": text})
        else:
            raise InvalidArguments(f"messages of role {role!r} are not supported with this model")
    if not turns:
        raise InvalidArguments("at least one user or assistant message is required")
    asked = body.get("max_completion_tokens") or body.get("max_tokens")
    request: dict[str, Any] = {
        "model": body["model"],
        "messages": turns,
        "max_tokens": asked or min(DEFAULT_MAX_TOKENS, max_tokens),
    }
    if system:
        request["system"] = "\n\n".join(system)
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            request[name] = body[name]
    stop = body.get("stop")
    if stop:
        request["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    return request


def to_chat_completion(answer: MessagesResponse) -> dict[str, Any]:
    """A Messages API answer in the shape of an OpenAI chat completion (text blocks joined)."""
    text = "".join(block.text or "" for block in answer.content if block.type == "text")
    return {
        "object": "chat.completion",
        "model": answer.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": _FINISH_REASONS.get(answer.stop_reason or "", "stop"),
            }
        ],
        "usage": {"prompt_tokens": answer.usage.input_tokens, "completion_tokens": answer.usage.output_tokens},
    }
