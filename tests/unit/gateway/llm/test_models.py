"""The LLM proxy's request and answer shapes (issue 17): a request is an allow-list the OpenAI client fits in, an
answer relays only the fields it declares; the Messages API translation never asks for more than the gateway's cap."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from pydantic import ValidationError

from gateway.llm.anthropic import DEFAULT_MAX_TOKENS, to_messages_request
from gateway.llm.proxy import ChatCompletionRequest, ChatCompletionResponse

MESSAGES: list[Any] = [{"role": "user", "content": "Hi"}]


def _sent_by_the_openai_client(**params: Any) -> dict[str, Any]:
    """The body the `openai` client sends for `chat.completions.create(**params)` (answered in memory)."""
    bodies: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(
            200, json={"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
        )

    http = httpx.Client(transport=httpx.MockTransport(answer))
    with openai.OpenAI(
        base_url="http://gateway/v1/llm", api_key="task-token", http_client=http, max_retries=0
    ) as client:
        client.chat.completions.create(**params)
    [body] = bodies
    return body


def test_what_the_openai_client_sends_is_accepted() -> None:
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    body = _sent_by_the_openai_client(
        model="gpt-task",
        messages=MESSAGES,
        n=1,
        max_tokens=100,
        max_completion_tokens=100,
        temperature=0.2,
        top_p=0.9,
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        seed=7,
        stop=["```"],
        tools=[tool],
        tool_choice={"type": "function", "function": {"name": "f"}},
    )
    request = ChatCompletionRequest.model_validate(body)
    assert request.model_dump(exclude_none=True, exclude={"messages", "stream"}) == {
        key: value for key, value in body.items() if key != "messages"
    }


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("n", 64, "Input should be 1"),
        ("max_tokens", 0, "greater than or equal to 1"),
        ("temperature", 3, "less than or equal to 2"),
        ("stop", ["a", "b", "c", "d", "e"], "at most 4 items"),
        ("user", "ana@example.org", "Extra inputs are not permitted"),
        ("logit_bias", {"50256": 100}, "Extra inputs are not permitted"),
        ("response_format", {"type": "json_object"}, "Extra inputs are not permitted"),
        ("tools", [{"type": "function", "function": {"name": "f"}, "cache": True}], "Extra inputs are not permitted"),
    ],
)
def test_a_request_beyond_the_allow_list_is_refused(field: str, value: Any, error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        ChatCompletionRequest.model_validate({"messages": MESSAGES, field: value})


def test_an_answer_keeps_only_its_declared_fields() -> None:
    upstream = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-task",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 99, "details": {"note": "ana@x.org"}},
        "system_fingerprint": "fp_1",
        "provider_note": "ana@example.org",
    }
    relayed = ChatCompletionResponse.model_validate(upstream).model_dump(exclude_none=True)
    assert relayed == {
        **{key: upstream[key] for key in ("id", "object", "created", "model", "choices")},
        "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5},
    }
    with pytest.raises(ValidationError):
        ChatCompletionResponse.model_validate({**upstream, "object": "list"})


def test_the_messages_api_gets_what_was_asked_or_at_most_the_cap() -> None:
    body = {"model": "claude-task", "messages": MESSAGES}
    assert to_messages_request(body, 16_384)["max_tokens"] == DEFAULT_MAX_TOKENS
    assert to_messages_request(body, 1000)["max_tokens"] == 1000
    assert to_messages_request({**body, "max_tokens": 700}, 1000)["max_tokens"] == 700
