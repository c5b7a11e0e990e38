"""LLM proxy, rate limits, metrics and the audit log.

The LLM upstream here is a scripted OpenAI-compatible or Anthropic Messages API server started by the test on
loopback (the one stand-in in these tests: a model is an external service). Everything else is real.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.settings import Limits
from tests.integration.gateway.conftest import GatewayThread, demo_spec, start_gateway
from tests.support import scripted_llm
from tests.support.scripted_llm import USAGE, ScriptedLLM
from tests.support.tasks import make_task

REPLY = "Sure, I will write to carol@example.com and call +1 202-555-0143."


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM([REPLY]) as server:
        yield server


@pytest.fixture(scope="module")
def small_gateway(llm: ScriptedLLM, workdir: Path) -> Iterator[GatewayThread]:
    """In-memory vault, a low rate limit, the scripted LLM upstream."""
    upstream = llm.upstream(default_model="gpt-test")
    servers = {"demo": demo_spec(workdir / "outbox-ops.jsonl")}
    with start_gateway(servers, workdir / "gw-ops.sock", llm=upstream, limits=Limits(requests_per_second=5)) as gw:
        yield gw


def test_llm_proxy_tokenizes_both_ways_and_holds_the_key(small_gateway: GatewayThread, llm: ScriptedLLM) -> None:
    task = make_task("llm-proxy", ["demo"], model="gpt-task")
    request = {
        "messages": [
            {"role": "system", "content": "You help with customers."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Email dave@example.com about IBAN NL91ABNA0417164300"}],
            },
        ],
        "temperature": 0,
    }
    with small_gateway.client_for(task) as c:
        answer = c.post("/v1/llm/chat/completions", json=request)
    assert answer.status_code == 200, answer.text
    headers, sent = llm.requests[-1]
    assert headers["Authorization"] == "Bearer sk-test-upstream"
    assert sent["model"] == "gpt-task" and sent["temperature"] == 0
    assert sent["messages"][1]["content"][0]["text"] == "Email [EMAIL_1] about IBAN [IBAN_1]"
    reply = answer.json()["choices"][0]["message"]["content"]
    assert reply == "Sure, I will write to [EMAIL_2] and call [PHONE_1]."
    assert small_gateway.gateway.usage(task.task_id) == {"llmTurns": 1, "tokensIn": 21, "tokensOut": 13, "toolCalls": 0}


@pytest.fixture(scope="module")
def claude() -> Iterator[ScriptedLLM]:
    with ScriptedLLM([REPLY], api="anthropic") as server:
        yield server


@pytest.fixture(scope="module")
def anthropic_gateway(claude: ScriptedLLM, workdir: Path) -> Iterator[GatewayThread]:
    upstream = claude.upstream("sk-ant-upstream")
    servers = {"demo": demo_spec(workdir / "outbox-claude.jsonl")}
    with start_gateway(servers, workdir / "gw-claude.sock", llm=upstream) as gw:
        yield gw


def test_anthropic_upstream_gets_a_messages_request_and_the_sandbox_an_openai_answer(
    anthropic_gateway: GatewayThread, claude: ScriptedLLM
) -> None:
    task = make_task("llm-claude", ["demo"], model="claude-task")
    request = {
        "messages": [
            {"role": "system", "content": "You help with customers."},
            {"role": "user", "content": [{"type": "text", "text": "Email dave@example.com"}]},
            {"role": "user", "content": "and call +1 202-555-0143"},
        ],
        "temperature": 0,
        "stop": "```\n",
        "seed": 7,
    }
    with anthropic_gateway.client_for(task) as c:
        answer = c.post("/v1/llm/chat/completions", json=request)
        refused = {
            "image": c.post(
                "/v1/llm/chat/completions",
                json={"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            ),
            "tools": c.post("/v1/llm/chat/completions", json={**request, "tools": []}),
            "tool role": c.post("/v1/llm/chat/completions", json={"messages": [{"role": "tool", "content": "x"}]}),
        }
    assert answer.status_code == 200, answer.text
    headers, sent = claude.requests[-1]
    assert headers["x-api-key"] == "sk-ant-upstream" and headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in headers
    assert sent == {
        "model": "claude-task",
        "system": "You help with customers.",
        "messages": [{"role": "user", "content": "Email [EMAIL_1]\n\nand call [PHONE_1]"}],
        "max_tokens": 4096,
        "temperature": 0,
        "stop_sequences": ["```\n"],
    }
    body = answer.json()
    assert body["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "Sure, I will write to [EMAIL_2] and call [PHONE_1]."},
        "finish_reason": "stop",
    }
    assert anthropic_gateway.gateway.usage(task.task_id) == {
        "llmTurns": 1, "tokensIn": 21, "tokensOut": 13, "toolCalls": 0,
    }  # fmt: skip
    assert {name: r.status_code for name, r in refused.items()} == {"image": 422, "tools": 422, "tool role": 422}
    assert len(claude.requests) == 1  # refused requests never left the gateway


def test_rate_limit_per_task(small_gateway: GatewayThread) -> None:
    busy, calm = make_task("rate-busy", ["demo"]), make_task("rate-calm", ["demo"])
    with small_gateway.client_for(busy) as b, small_gateway.client_for(calm) as c:
        answers = [b.get("/v1/servers") for _ in range(12)]
        assert answers[0].status_code == 200
        refused = [a for a in answers if a.status_code == 429]
        assert refused and refused[0].json()["error"]["code"] == "rate_limited"
        assert refused[0].headers["Retry-After"] == "1"
        assert c.get("/v1/servers").status_code == 200  # another task's budget is its own


def test_audit_log_and_metrics(small_gateway: GatewayThread, caplog: pytest.LogCaptureFixture) -> None:
    task = make_task("audit", ["demo"])
    with caplog.at_level(logging.INFO, logger="mcpexec.gateway.audit"), small_gateway.client_for(task) as c:
        ok = c.post("/v1/tools/demo/search_customers/call", json={"arguments": {"query": "bob.okafor@example.net"}})
        bad = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {}})
    metrics = small_gateway.metrics()
    assert ok.status_code == 200 and bad.status_code == 422
    records = [r for r in caplog.records if r.name == "mcpexec.gateway.audit"]
    audit = [(r.task, r.action, r.target, r.outcome) for r in records]  # type: ignore[attr-defined]
    assert ("default/audit", "call", "demo/search_customers", "ok") in audit
    assert ("default/audit", "call", "demo/get_customer", "invalid_arguments") in audit
    assert all(r.duration_ms >= 0 for r in records)  # type: ignore[attr-defined]
    assert "example" not in " ".join(json.dumps(r.__dict__, default=str) for r in records)
    assert 'mcpexec_gateway_tool_calls_total{outcome="ok",server="demo",tool="search_customers"}' in metrics
    assert 'mcpexec_gateway_errors_total{code="invalid_arguments"}' in metrics
    assert 'mcpexec_gateway_pii_detections_total{entity="EMAIL"}' in metrics
    assert "mcpexec_gateway_tool_call_seconds_bucket" in metrics
    call_route = 'route="/v1/tools/{server}/{tool}/call"'
    assert f'mcpexec_gateway_http_responses_total{{code="200",{call_route}}}' in metrics
    assert f'mcpexec_gateway_http_responses_total{{code="422",{call_route}}}' in metrics


def test_names_from_the_url_do_not_become_metric_series(gateway: GatewayThread) -> None:
    """Calls to tools and servers the task does not have all count under one `(unknown)` series (issue 17)."""
    task = make_task("cardinality", ["demo"])
    with gateway.client_for(task) as c:
        before = gateway.metrics().count("\n")
        for i in range(30):  # under the default rate limit
            assert c.post(f"/v1/tools/demo/nope{i}/call", json={"arguments": {}}).status_code == 404
            assert c.post(f"/v1/tools/srv{i}/tool/call", json={"arguments": {}}).status_code == 404
    metrics = gateway.metrics()
    assert "nope" not in metrics and "srv1" not in metrics
    assert 'mcpexec_gateway_tool_calls_total{outcome="not_found",server="(unknown)",tool="(unknown)"}' in metrics
    assert 'mcpexec_gateway_http_responses_total{code="404",route="/v1/tools/{server}/{tool}/call"}' in metrics
    assert metrics.count("\n") - before < 40  # one new series of each counter and the histogram, not 60


def test_a_tasks_usage_is_dropped_when_it_is_unregistered(small_gateway: GatewayThread) -> None:
    task = make_task("usage-forgotten", ["demo"])
    with small_gateway.client_for(task) as c:
        c.post("/v1/tools/demo/search_customers/call", json={"arguments": {"query": "x"}})
    meter = small_gateway.gateway.core.usage
    assert small_gateway.gateway.usage(task.task_id)["toolCalls"] == 1
    held = len(meter)
    small_gateway.run(small_gateway.gateway.unregister_task(task.task_id))
    assert len(meter) == held - 1


URL = "/v1/llm/chat/completions"
MAX_TOKENS = 1000


@pytest.fixture(scope="module")
def capped_gateway(llm: ScriptedLLM, workdir: Path) -> Iterator[GatewayThread]:
    """The scripted upstream with the admin's max_tokens at MAX_TOKENS; no MCP servers (the LLM proxy needs none)."""
    upstream = llm.upstream(default_model="gpt-test", max_tokens=MAX_TOKENS)
    with start_gateway({}, workdir / "gw-llm-capped.sock", llm=upstream) as gw:
        yield gw


def test_the_sandbox_cannot_pick_the_model_or_widen_the_request(
    capped_gateway: GatewayThread, llm: ScriptedLLM
) -> None:
    """Issue 17: the task's model (else the gateway's), one choice, at most the admin's max_tokens, known fields only.
    Each refusal says why and none reaches the upstream; what is let through goes up tokenized, stop sequences too."""
    pinned, unpinned = make_task("llm-pinned", [], model="gpt-task"), make_task("llm-unpinned", [])
    messages = [{"role": "user", "content": "Write to dave@example.com"}]
    before = len(llm.requests)
    with capped_gateway.client_for(pinned) as c:
        refused = {
            "another model": c.post(URL, json={"messages": messages, "model": "gpt-expensive"}),
            "n": c.post(URL, json={"messages": messages, "n": 64}),
            "unknown field": c.post(URL, json={"messages": messages, "logit_bias": {"50256": 100}}),
            "max_tokens": c.post(URL, json={"messages": messages, "max_tokens": MAX_TOKENS + 1}),
            "max_completion_tokens": c.post(URL, json={"messages": messages, "max_completion_tokens": 10**9}),
        }
        within = {"model": "gpt-task", "n": 1, "max_completion_tokens": MAX_TOKENS, "stop": ["dave@example.com"]}
        allowed = c.post(URL, json={"messages": messages, **within, "seed": 7})
    with capped_gateway.client_for(unpinned) as c:
        refused["a model, the task naming none"] = c.post(URL, json={"messages": messages, "model": "gpt-task"})
        default = c.post(URL, json={"messages": messages})
    other_model = "this task's model is {!r}: a request may not name another"
    over = "{} {} is over this gateway's limit of " + str(MAX_TOKENS)
    errors = {
        name: (a.status_code, a.json()["error"]["code"], a.json()["error"]["message"]) for name, a in refused.items()
    }
    assert errors == {
        "another model": (403, "forbidden", other_model.format("gpt-task")),
        "n": (422, "invalid_request", "body.n: Input should be 1"),
        "unknown field": (422, "invalid_request", "body.logit_bias: Extra inputs are not permitted"),
        "max_tokens": (422, "invalid_arguments", over.format("max_tokens", MAX_TOKENS + 1)),
        "max_completion_tokens": (422, "invalid_arguments", over.format("max_completion_tokens", 10**9)),
        "a model, the task naming none": (403, "forbidden", other_model.format("gpt-test")),
    }
    assert (allowed.status_code, default.status_code) == (200, 200), (allowed.text, default.text)
    tokenized = [{"role": "user", "content": "Write to [EMAIL_1]"}]
    assert [body for _headers, body in llm.requests[before:]] == [
        {"messages": tokenized, **within, "stop": ["[EMAIL_1]"], "seed": 7, "stream": False},
        {"messages": tokenized, "model": "gpt-test", "stream": False},
    ]


def test_only_the_declared_answer_fields_come_back_all_tokenized(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upstream's fields outside a chat completion (a provider's own, usage details) are dropped, not relayed raw;
    those kept are tokenized, in a JSON answer and in a stream alike (issue 17)."""
    email = "carol@example.com"
    scripted = scripted_llm._chat_completion

    def with_extras(body: dict[str, Any], reply: scripted_llm.Reply, number: int) -> dict[str, Any]:
        answer = scripted(body, reply, number)
        usage = answer["usage"] | {"prompt_tokens_details": {"note": email}}
        return answer | {"id": f"chatcmpl-{email}", "system_fingerprint": email, "x_note": email, "usage": usage}

    monkeypatch.setattr(scripted_llm, "_chat_completion", with_extras)
    task = make_task("llm-extras", [], model="gpt-task")
    request = {"messages": [{"role": "user", "content": "Hi"}]}
    with (
        ScriptedLLM([REPLY]) as extras_llm,
        start_gateway({}, workdir / "gw-llm-extras.sock", llm=extras_llm.upstream()) as gw,
        gw.client_for(task) as c,
    ):
        whole = c.post(URL, json=request)
        streamed = c.post(URL, json={**request, "stream": True, "stream_options": {"include_usage": True}})
    assert whole.status_code == 200 and streamed.status_code == 200, (whole.text, streamed.text)
    assert extras_llm.requests  # the upstream did answer with the extras
    for answer in (whole, streamed):
        assert "carol@" not in answer.text and "x_note" not in answer.text and "fingerprint" not in answer.text
    body = whole.json()
    assert set(body) == {"id", "object", "created", "model", "choices", "usage"}
    assert body["usage"] == USAGE and body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"].startswith("Sure, I will write to [EMAIL_")
