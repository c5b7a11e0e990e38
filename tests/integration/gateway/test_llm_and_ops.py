"""LLM proxy, rate limits, metrics and the audit log.

The LLM upstream here is a scripted OpenAI-compatible or Anthropic Messages API server started by the test on
loopback (the one stand-in in these tests: a model is an external service). Everything else is real.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.settings import Limits
from tests.integration.gateway.conftest import GatewayThread, demo_spec, start_gateway
from tests.support.scripted_llm import ScriptedLLM
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
    assert metrics.count("\n") - before < 30  # one new series and its histogram, not 60


def test_a_tasks_usage_is_dropped_when_it_is_unregistered(small_gateway: GatewayThread) -> None:
    task = make_task("usage-forgotten", ["demo"])
    with small_gateway.client_for(task) as c:
        c.post("/v1/tools/demo/search_customers/call", json={"arguments": {"query": "x"}})
    meter = small_gateway.gateway.core.usage
    assert small_gateway.gateway.usage(task.task_id)["toolCalls"] == 1
    held = len(meter)
    small_gateway.run(small_gateway.gateway.unregister_task(task.task_id))
    assert len(meter) == held - 1
