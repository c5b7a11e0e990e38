"""`stream: true` on the LLM proxy: the whole answer is fetched and tokenized, then sent as OpenAI chunk events.

Through the real gateway over HTTP; the LLM upstream is the scripted server (tests/support/scripted_llm.py), the one
stand-in (a hosted model cannot run here). The gateways have no MCP servers: the LLM proxy needs none.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import SecretStr

from gateway.settings import LLMUpstream
from tests.integration.gateway.conftest import GatewayThread, start_gateway
from tests.support.scripted_llm import USAGE, ScriptedLLM
from tests.support.tasks import make_task

URL = "/v1/llm/chat/completions"
EMAIL, PHONE = "carol@example.com", "202-555-0143"
REPLY = f"Sure, I will write to {EMAIL} and call +1 {PHONE}."
# The request's own email is minted first in each task, so the answer's is [EMAIL_2].
TOKENIZED_REPLY = "Sure, I will write to [EMAIL_2] and call [PHONE_1]."
REQUEST: dict[str, Any] = {"messages": [{"role": "user", "content": "Write to dave@example.com"}], "stream": True}
TOOL_CALL_MESSAGE = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "send_email", "arguments": json.dumps({"to": EMAIL, "body": f"call +1 {PHONE}"})},
        }
    ],
}


def chunks_of(answer: httpx.Response) -> list[dict[str, Any]]:
    """The JSON chunks of an event stream, after checking its framing and that it ends with `[DONE]`."""
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.text.endswith("\n\n")
    events = answer.text[:-2].split("\n\n")
    assert all(event.startswith("data: ") for event in events)
    assert events[-1] == "data: [DONE]"
    return [json.loads(event.removeprefix("data: ")) for event in events[:-1]]


def assert_no_raw_pii(answer: httpx.Response) -> None:
    for raw in (EMAIL, PHONE, "carol@"):
        assert raw.encode() not in answer.content


def gateway_for(upstream: LLMUpstream | None, socket_path: Path) -> GatewayThread:
    return start_gateway({}, socket_path, llm=upstream)


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM([REPLY]) as server:
        yield server


@pytest.fixture(scope="module")
def stream_gateway(llm: ScriptedLLM, workdir: Path) -> Iterator[GatewayThread]:
    with gateway_for(llm.upstream(default_model="gpt-test"), workdir / "gw-stream.sock") as gw:
        yield gw


def test_stream_is_the_whole_tokenized_answer_in_chunks(stream_gateway: GatewayThread, llm: ScriptedLLM) -> None:
    task = make_task("stream-text", [], model="gpt-task")
    before = len(llm.requests)
    with stream_gateway.client_for(task) as c:
        streamed = c.post(URL, json=REQUEST)
        whole = c.post(URL, json={**REQUEST, "stream": False})
    assert_no_raw_pii(streamed)
    chunks = chunks_of(streamed)
    assert [chunk["choices"] for chunk in chunks] == [
        [{"index": 0, "delta": {"role": "assistant", "content": TOKENIZED_REPLY}, "finish_reason": None}],
        [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    ]
    number = before + 1  # the scripted answer's id and created
    assert [(c["id"], c["object"], c["created"], c["model"]) for c in chunks] == [
        (f"chatcmpl-{number}", "chat.completion.chunk", 1_700_000_000 + number, "gpt-task")
    ] * 2
    assert all("usage" not in chunk for chunk in chunks)
    content = "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks)
    assert whole.headers["content-type"] == "application/json"
    assert content == whole.json()["choices"][0]["message"]["content"]
    sent = [body for _headers, body in llm.requests[before:]]
    assert [body["stream"] for body in sent] == [False, False]
    assert sent[0]["messages"] == [{"role": "user", "content": "Write to [EMAIL_1]"}]


def test_usage_chunk_only_when_asked_and_usage_counted_once(stream_gateway: GatewayThread, llm: ScriptedLLM) -> None:
    task = make_task("stream-usage", [], model="gpt-task")
    before = len(llm.requests)
    with stream_gateway.client_for(task) as c:
        with_usage = chunks_of(c.post(URL, json={**REQUEST, "stream_options": {"include_usage": True}}))
        assert stream_gateway.gateway.usage(task.task_id) == {
            "llmTurns": 1, "tokensIn": 21, "tokensOut": 13, "toolCalls": 0,
        }  # fmt: skip
        without = chunks_of(c.post(URL, json={**REQUEST, "stream_options": {"include_usage": False}}))
        plain = chunks_of(c.post(URL, json=REQUEST))
    assert with_usage[-1]["choices"] == [] and with_usage[-1]["usage"] == USAGE
    assert [len(with_usage), len(without), len(plain)] == [3, 2, 2]
    assert all("usage" not in chunk for chunk in [*with_usage[:-1], *without, *plain])
    assert stream_gateway.gateway.usage(task.task_id) == {
        "llmTurns": 3,
        "tokensIn": 63,
        "tokensOut": 39,
        "toolCalls": 0,
    }
    assert all("stream_options" not in body for _headers, body in llm.requests[before:])


@pytest.fixture(scope="module")
def tool_llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM([TOOL_CALL_MESSAGE]) as server:
        yield server


def test_tool_calls_are_streamed_tokenized(tool_llm: ScriptedLLM, workdir: Path) -> None:
    upstream = tool_llm.upstream(default_model="gpt-test")
    task = make_task("stream-tools", [], model="gpt-task")
    with gateway_for(upstream, workdir / "gw-stream-tools.sock") as gw, gw.client_for(task) as c:
        streamed = c.post(URL, json=REQUEST)
    assert_no_raw_pii(streamed)
    first, finish = chunks_of(streamed)
    arguments = json.dumps({"to": "[EMAIL_2]", "body": "call [PHONE_1]"})
    assert first["choices"] == [
        {
            "index": 0,
            "delta": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "send_email", "arguments": arguments},
                    }
                ],
            },
            "finish_reason": None,
        }
    ]
    assert finish["choices"] == [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]


def test_the_openai_client_consumes_the_stream(stream_gateway: GatewayThread) -> None:
    task = make_task("stream-openai", [], model="gpt-task")
    http = httpx.Client(transport=httpx.HTTPTransport(uds=str(stream_gateway.socket_path)))
    client = openai.OpenAI(
        base_url=stream_gateway.base_url + "/v1/llm", api_key=stream_gateway.token(task), http_client=http
    )
    with client:
        stream = client.chat.completions.create(
            model="gpt-task",
            messages=REQUEST["messages"],
            stream=True,
            stream_options={"include_usage": True},
        )
        parts = list(stream)
    text = "".join(part.choices[0].delta.content or "" for part in parts if part.choices)
    assert text == TOKENIZED_REPLY
    assert [part.choices[0].finish_reason for part in parts if part.choices] == [None, "stop"]
    assert parts[-1].usage.prompt_tokens == 21 and parts[-1].usage.completion_tokens == 13


def test_errors_are_json_answers_not_streams(workdir: Path) -> None:
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        down_url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    down = LLMUpstream(base_url=down_url, api_key=SecretStr("k"), default_model="gpt-test", timeout_seconds=5)
    task = make_task("stream-errors", [], model="gpt-task")
    answers = {}
    with gateway_for(None, workdir / "gw-stream-none.sock") as gw, gw.client_for(task) as c:
        answers["no upstream"] = c.post(URL, json=REQUEST)
        answers["invalid"] = c.post(URL, json={"messages": [], "stream": True})
    with gateway_for(down, workdir / "gw-stream-down.sock") as gw, gw.client_for(task) as c:
        answers["upstream down"] = c.post(URL, json=REQUEST)
        assert gw.gateway.usage(task.task_id)["llmTurns"] == 0
    with ScriptedLLM([{"role": "assistant", "tool_calls": [{"id": "call_1"}]}]) as bad_llm:
        bad = bad_llm.upstream(default_model="gpt-test")
        with gateway_for(bad, workdir / "gw-stream-bad.sock") as gw, gw.client_for(task) as c:
            answers["a call without its function"] = c.post(URL, json=REQUEST)
    assert {name: (a.status_code, a.headers["content-type"]) for name, a in answers.items()} == {
        "no upstream": (503, "application/json"),
        "invalid": (422, "application/json"),
        "upstream down": (502, "application/json"),
        "a call without its function": (502, "application/json"),
    }
    assert [a.json()["error"]["code"] for a in answers.values()] == [
        "llm_unavailable", "invalid_request", "upstream_error", "upstream_error",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def claude() -> Iterator[ScriptedLLM]:
    with ScriptedLLM([REPLY], api="anthropic") as server:
        yield server


def test_anthropic_upstream_streams_a_translated_tokenized_answer(claude: ScriptedLLM, workdir: Path) -> None:
    upstream = claude.upstream("sk-ant-upstream")
    task = make_task("stream-claude", [], model="claude-task")
    request = {**REQUEST, "stream_options": {"include_usage": True}}
    started = int(time.time())
    with gateway_for(upstream, workdir / "gw-stream-claude.sock") as gw, gw.client_for(task) as c:
        streamed = c.post(URL, json=request)
        usage = gw.gateway.usage(task.task_id)
    assert_no_raw_pii(streamed)
    chunks = chunks_of(streamed)
    assert [chunk["choices"] for chunk in chunks] == [
        [{"index": 0, "delta": {"role": "assistant", "content": TOKENIZED_REPLY}, "finish_reason": None}],
        [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        [],
    ]
    assert chunks[-1]["usage"] == USAGE
    assert len({chunk["id"] for chunk in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert {chunk["model"] for chunk in chunks} == {"claude-task"}
    assert all(started <= chunk["created"] <= time.time() for chunk in chunks)
    assert usage == {"llmTurns": 1, "tokensIn": 21, "tokensOut": 13, "toolCalls": 0}
    _headers, sent = claude.requests[-1]
    assert sent["messages"] == [{"role": "user", "content": "Write to [EMAIL_1]"}]
    assert "stream" not in sent and "stream_options" not in sent
