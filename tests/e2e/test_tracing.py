"""One task's trace on the real node (tracing.otlpEndpoint set at install): the operator's launch, the sandbox's
runtime under gVisor (its spans sent out through the gateway, its only way out), the gateway's request and upstream
call to the demo MCP server, all in one trace with the right parents, read back from a real Jaeger on the host; the
demo server's log shows the call arrived with that upstream span as its parent, in `_meta` and the HTTP header. No
span holds a value the vault keeps."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.node import Node
from tests.e2e.node_artifacts import kubectl_binary
from tests.e2e.node_network import host_ip
from tests.e2e.release import API_VERSION, GROUP, crm_server, install_release, wait_task
from tests.support.trace_receiver import Jaeger, jaeger, parent_of, service_of, spans_by_name

pytestmark = pytest.mark.e2e

CODE = """
from servers.crm import get_customer
bob = get_customer(customer_id="C002")
print("customer:", bob["name"], bob["email"], bob["phone"])
"""
VAULT_VALUES = ("Bob Okafor", "bob.okafor@example.net", "(415) 555-0199")


@pytest.fixture(scope="module")
def receiver() -> Iterator[Jaeger]:
    with jaeger(host="0.0.0.0") as running:
        yield running


@pytest.fixture(scope="module")
def traced_release(e2e_node: Node, receiver: Jaeger) -> str:
    return install_release(e2e_node, "--set", f"tracing.otlpEndpoint=http://{host_ip()}:{receiver.otlp_port}")


def _complete(trace: dict[str, Any]) -> bool:
    named = spans_by_name(trace)
    return all(
        name in named for name in ("operator.launch", "runtime.task", "runtime.tool_call", "gateway.upstream_call")
    )


def _logged_calls(core: client.CoreV1Api, namespace: str) -> list[dict[str, Any]]:
    """The demo server's JSON log lines, one per tool call (uvicorn's access lines are not JSON)."""
    log = core.read_namespaced_pod_log("crm", namespace)
    return [json.loads(line) for line in log.splitlines() if line.startswith("{") and '"tool call"' in line]


def test_a_tasks_trace_runs_from_the_operator_through_the_sandbox_and_gateway_to_the_mcp_server(
    e2e_node: Node, traced_release: str, receiver: Jaeger, core: client.CoreV1Api, namespace: str
) -> None:
    custom = client.CustomObjectsApi()
    crm_server(core, custom, namespace)
    task = {
        "apiVersion": f"{GROUP}/{API_VERSION}",
        "kind": "AgentTask",
        "metadata": {"name": "traced"},
        "spec": {"timeoutSeconds": 120, "mcpServers": ["crm"], "code": CODE},
    }
    kubectl = [str(kubectl_binary()), "--kubeconfig", str(e2e_node.cp.kubeconfig)]
    subprocess.run([*kubectl, "apply", "-n", namespace, "-f", "-"], input=json.dumps(task), text=True, check=True)
    status = wait_task(custom, "traced", namespace)["status"]
    assert status["phase"] == "Succeeded", status
    assert "customer: [PERSON_1]" in status["result"] or "[EMAIL_1]" in status["result"], status

    trace = receiver.wait_for(status["traceId"], _complete, timeout=120)
    named = spans_by_name(trace)
    (launch,) = named["operator.launch"]
    (task_span,) = named["runtime.task"]
    (call,) = named["runtime.tool_call"]
    (request,) = named["POST /v1/tools/crm/get_customer/call"]
    (upstream,) = named["gateway.upstream_call"]
    assert launch["spanID"] == status["traceparent"].split("-")[2]
    assert parent_of(task_span) == launch["spanID"]
    assert parent_of(call) == task_span["spanID"]
    assert parent_of(request) == call["spanID"]
    assert parent_of(upstream) == request["spanID"]
    assert [service_of(trace, s) for s in (launch, task_span, request)] == [
        "mcpexec-operator",
        "mcpexec-sandbox",
        "mcpexec-gateway",
    ]
    (received,) = [line for line in _logged_calls(core, namespace) if line["tool"] == "get_customer"]
    assert received["meta_traceparent"] == received["header_traceparent"], received
    _version, trace_id, parent, _flags = received["meta_traceparent"].split("-")
    assert (trace_id, parent) == (status["traceId"], upstream["spanID"]), received
    exported = json.dumps(trace)
    for value in VAULT_VALUES:
        assert value not in exported
