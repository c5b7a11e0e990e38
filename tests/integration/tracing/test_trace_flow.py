"""One task's trace across the pieces, read back from a real Jaeger: the task's span (played here by the test, as the
operator makes it in a cluster), the runtime (`python3 -S -m runtime`, as in the sandbox) with its task and tool-call
spans sent through the gateway, the gateway's request, auth, policy, PII scan, vault and upstream-call spans, and the
MCP servers (stdio and streamable HTTP) given the trace context in `_meta` (and the HTTP one as a header). No span
carries a value from the vault or a token."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.settings import LLMUpstream
from mcpexec import tracing
from mcpexec.api.agenttask import parse_agenttask, runtime_task_config
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.sandbox.process import UnsafeProcessSandbox
from mcpexec.local.sessions import LocalSessions
from tests.integration.gateway.conftest import start_gateway
from tests.integration.runtime.conftest import RuntimeRun, runtime_root, start_runtime
from tests.integration.tracing.trace_server import EMAIL, PHONE, records
from tests.support.components import free_port, listening, redis_server
from tests.support.scripted_llm import ScriptedLLM
from tests.support.sessions import SessionsThread
from tests.support.tasks import make_task
from tests.support.trace_receiver import Jaeger, jaeger, parent_of, render, service_of, spans_by_name, tags

TRACE_SERVER = [sys.executable, "-m", "tests.integration.tracing.trace_server"]
CODE = """
first = call_tool("crm/lookup", {"customer": "C1"})
second = call_tool("crmhttp/lookup", {"customer": first["email"]})
print(first["email"], second["phone"])
"""


@pytest.fixture(scope="module")
def receiver() -> Iterator[Jaeger]:
    with jaeger() as running:
        yield running


@pytest.fixture
def traced(receiver: Jaeger, monkeypatch: pytest.MonkeyPatch) -> Iterator[Jaeger]:
    """Tracing on in this process (the gateway's), exporting to the receiver."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.otlp_endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    tracing.shutdown()
    assert tracing.configure("mcpexec-gateway")
    yield receiver
    tracing.shutdown()


def _complete(trace: dict[str, Any]) -> bool:
    named = spans_by_name(trace)
    return (
        len(named.get("runtime.tool_call", [])) == 2
        and len(named.get("gateway.upstream_call", [])) == 2
        and ("runtime.task" in named)
    )


@dataclass(frozen=True)
class TracedRun:
    run: RuntimeRun
    traceparent: str  # the task's: the stand-in for the operator's launch span
    token: str


def _launched() -> str:
    """A task's trace, started as the operator's launch span starts it."""
    with tracing.span("operator.launch") as launch:
        traceparent = tracing.traceparent_of(launch)
    assert traceparent is not None
    return traceparent


def _traced_run(
    tmp_path: Path, servers: dict[str, MCPServerSpec], spec: dict[str, Any], llm: LLMUpstream | None = None
) -> TracedRun:
    """`python3 -S -m runtime` on a task of `spec` under a gateway (Redis-backed vault) whose spans go to the
    receiver; the task's trace starts at a span of the test's, as the operator's launch starts it in a cluster."""
    task = parse_agenttask(
        {
            "apiVersion": "mcpexec.dev/v1alpha1",
            "kind": "AgentTask",
            "metadata": {"name": "traced", "namespace": "default"},
            "spec": spec,
        }
    )
    with redis_server() as redis_url, start_gateway(servers, tmp_path / "gw.sock", redis_url=redis_url, llm=llm) as gw:
        traceparent = _launched()
        token = gw.gateway.register_task(task, 600, traceparent)
        context = gw.gateway.context(task.task_id)
        assert context is not None
        config = runtime_task_config("default", "traced", context.uid, task.spec, traceparent=traceparent)
        run = start_runtime(
            runtime_root(tmp_path), task, f"unix://{gw.socket_path}", token=token, task_json=json.dumps(config)
        ).wait()
    return TracedRun(run, traceparent, token)


def test_one_trace_from_the_task_through_the_runtime_and_gateway_to_the_mcp_servers(
    traced: Jaeger, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.jsonl"
    port = free_port()
    servers = {
        "crm": MCPServerSpec(transport="stdio", command=TRACE_SERVER, env={"RECORD_FILE": str(calls)}),
        "crmhttp": MCPServerSpec(transport="streamableHttp", url=f"http://127.0.0.1:{port}/mcp"),
    }
    recorded = {**os.environ, "RECORD_FILE": str(calls)}
    with listening([*TRACE_SERVER, "--http", str(port)], port, "trace server", recorded):
        traced_run = _traced_run(tmp_path, servers, {"mcpServers": ["crm", "crmhttp"], "code": CODE})
    run, traceparent, token = traced_run.run, traced_run.traceparent, traced_run.token
    assert run.exit_code == 0, run
    assert run.result["result"].strip() == "[EMAIL_1] [PHONE_1]"  # the sandbox saw tokens only

    trace_id, launch_id = traceparent.split("-")[1:3]
    trace = traced.wait_for(trace_id, _complete)
    print(render(trace))  # docs/observability.md shows one
    named = spans_by_name(trace)
    ids = {name: {span["spanID"] for span in spans} for name, spans in named.items()}

    # operator -> runtime: the task's span, then each tool call under it, in the sandbox's own service.
    (task_span,) = named["runtime.task"]
    assert parent_of(task_span) == launch_id and service_of(trace, task_span) == "mcpexec-sandbox"
    process_tags = {tag["key"]: tag["value"] for tag in trace["processes"][task_span["processID"]]["tags"]}
    assert process_tags["mcpexec.task.name"] == "traced"  # the gateway's word on whose spans these are
    assert {parent_of(call) for call in named["runtime.tool_call"]} == {task_span["spanID"]}
    assert sorted(tags(call)["mcpexec.tool"] for call in named["runtime.tool_call"]) == ["crm/lookup", "crmhttp/lookup"]
    # runtime -> gateway: each tool call's request is a child of its call's span.
    requests = named["POST /v1/tools/crm/lookup/call"] + named["POST /v1/tools/crmhttp/lookup/call"]
    assert {parent_of(request) for request in requests} == ids["runtime.tool_call"]
    request_ids = {request["spanID"] for request in requests}
    for step in ("gateway.policy", "gateway.upstream_call"):
        assert {parent_of(span) for span in named[step]} == request_ids, step
    assert request_ids <= {parent_of(span) for span in named["gateway.auth"]}  # every request's token is checked
    assert all(service_of(trace, request) == "mcpexec-gateway" for request in requests)
    # The PII scan says how much it found, the vault how much it was asked for.
    assert sum(tags(span).get("mcpexec.pii.found.EMAIL", 0) for span in named["gateway.pii_scan"]) >= 2
    assert any(tags(span)["mcpexec.vault.operation"] == "values_for" for span in named["gateway.vault"])

    # gateway -> MCP servers: `_meta.traceparent` under the upstream call's span; the HTTP one as a header too.
    stdio_call, http_call = records(calls)
    for call in (stdio_call, http_call):
        _version, call_trace, call_parent, _flags = call["meta"]["traceparent"].split("-")
        assert call_trace == trace_id and call_parent in ids["gateway.upstream_call"]
    assert stdio_call["header"] is None and http_call["header"] == http_call["meta"]["traceparent"]
    assert http_call["customer"] == EMAIL  # the vault's value went to the server, as it should ...

    # ... and into no span: every attribute, event and resource attribute of the whole trace is scanned.
    exported = json.dumps(trace)
    for secret in (EMAIL, PHONE, token):
        assert secret not in exported


def test_an_llm_turn_is_a_span_of_the_runtime_over_the_gateways_model_call(traced: Jaeger, tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    servers = {"crm": MCPServerSpec(transport="stdio", command=TRACE_SERVER, env={"RECORD_FILE": str(calls)})}
    turns = [
        '```python\nprint(call_tool("crm/lookup", {"customer": "C1"})["email"])\n```',
        "```final\nThe customer's email is [EMAIL_1].\n```",
    ]
    with ScriptedLLM(turns) as llm:
        spec = {"mcpServers": ["crm"], "prompt": "find C1's email", "model": "m"}
        traced_run = _traced_run(tmp_path, servers, spec, llm.upstream("sk-secret-key"))
    assert traced_run.run.exit_code == 0, traced_run.run
    trace_id = traced_run.traceparent.split("-")[1]
    trace = traced.wait_for(trace_id, lambda t: len(spans_by_name(t).get("runtime.llm_call", [])) == 2)
    named = spans_by_name(trace)
    (task_span,) = named["runtime.task"]
    turns_ids = {span["spanID"] for span in named["runtime.llm_call"]}
    assert {parent_of(span) for span in named["runtime.llm_call"]} == {task_span["spanID"]}
    assert all(tags(span)["mcpexec.llm.tokens_in"] > 0 for span in named["runtime.llm_call"])
    requests = named["POST /v1/llm/chat/completions"]
    assert {parent_of(request) for request in requests} == turns_ids
    assert {parent_of(span) for span in named["gateway.llm_call"]} == {request["spanID"] for request in requests}
    assert {tags(span)["mcpexec.llm.model"] for span in named["gateway.llm_call"]} == {"m"}
    # The tool call the model's code made is in the same trace, under the task.
    (call,) = named["runtime.tool_call"]
    assert parent_of(call) == task_span["spanID"]
    exported = json.dumps(trace)
    for secret in (EMAIL, PHONE, traced_run.token, "sk-secret-key"):
        assert secret not in exported


def test_a_sessions_executions_are_spans_of_the_trace_its_launch_started(
    traced: Jaeger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mcpexec serve`'s session core (the runtime in session mode as a real subprocess): each execution is a span
    of the session's trace, its tool calls under it, sent out after each execution."""
    monkeypatch.setenv("MCPEXEC_HOME", str(tmp_path / "home"))
    servers = {"crm": MCPServerSpec(transport="stdio", command=TRACE_SERVER, env={"RECORD_FILE": str(tmp_path / "r")})}
    code = 'print(call_tool("crm/lookup", {"customer": "C1"})["email"])'
    with SessionsThread(LocalSessions(servers, UnsafeProcessSandbox(), warm=1)) as thread:
        session = thread.claim_ready()
        outcome = thread.execute(session, code)
        traceparent = session.context.traceparent
        assert outcome.stdout.strip() == "[EMAIL_1]" and traceparent is not None
        trace_id, start_id = traceparent.split("-")[1:3]
        trace = traced.wait_for(trace_id, lambda t: "runtime.session_execution" in spans_by_name(t))
    named = spans_by_name(trace)
    (start,) = named["mcpexec.session_start"]
    (execution,) = named["runtime.session_execution"]
    (call,) = named["runtime.tool_call"]
    assert start["spanID"] == start_id and parent_of(call) == execution["spanID"]
    assert tags(execution)["mcpexec.execution_id"] and parent_of(execution) is not None  # under the runtime's task
    assert EMAIL not in json.dumps(trace)


def _span_in(traceparent: str) -> str:
    """Another span of the same trace, as the runtime's tool-call span is."""
    return f"00-{traceparent.split('-')[1]}-{os.urandom(8).hex()}-01"


def test_a_sandbox_cannot_put_the_gateways_spans_into_a_trace_not_its_tasks(traced: Jaeger, tmp_path: Path) -> None:
    """The `traceparent` header is the sandbox's to write: the gateway keeps it only when it names the caller's own
    task's trace. A hostile sandbox naming another task's trace (read from that task's status, say) gets its request's
    spans put under its own task's span; one with no trace, or a refused token, gets spans of a trace of their own."""
    servers = {"crm": MCPServerSpec(transport="stdio", command=TRACE_SERVER, env={"RECORD_FILE": str(tmp_path / "r")})}
    victim, attacker = _launched(), _launched()
    with start_gateway(servers, tmp_path / "gw.sock") as gw:
        victim_token = gw.gateway.register_task(make_task("victim", ["crm"]), 600, victim)
        attacker_token = gw.gateway.register_task(make_task("attacker", ["crm"]), 600, attacker)
        untraced_token = gw.gateway.register_task(make_task("untraced", ["crm"]), 600)
        own = _span_in(attacker)
        with gw.client(victim_token) as client:
            assert client.get("/v1/servers", headers={"traceparent": _span_in(victim)}).status_code == 200
        with gw.client(attacker_token) as client:
            assert client.get("/v1/servers", headers={"traceparent": _span_in(victim)}).status_code == 200
            assert client.get("/v1/servers", headers={"traceparent": own}).status_code == 200
        with gw.client(untraced_token) as client:
            assert client.get("/v1/servers", headers={"traceparent": _span_in(victim)}).status_code == 200
        with gw.client("forged-token") as client:
            assert client.get("/v1/servers", headers={"traceparent": _span_in(victim)}).status_code == 401
        tracing.flush()
    attacker_id, attacker_launch = attacker.split("-")[1:3]
    trace = traced.wait_for(attacker_id, lambda t: len(spans_by_name(t).get("GET /v1/servers", [])) == 2)
    # Under its task's span (the victim's header forced out), and under its own span (its header kept).
    assert {parent_of(span) for span in spans_by_name(trace)["GET /v1/servers"]} == {attacker_launch, own.split("-")[2]}
    # The victim's trace holds its own request only: its request span and that one's auth span, nothing more.
    victims = spans_by_name(traced.wait_for(victim.split("-")[1], lambda t: "gateway.auth" in spans_by_name(t)))
    assert len(victims["GET /v1/servers"]) == 1 and len(victims["gateway.auth"]) == 1
    assert set(victims) == {"operator.launch", "GET /v1/servers", "gateway.auth"}
    assert all(tags(span)["mcpexec.task.name"] == "victim" for span in victims["gateway.auth"])
