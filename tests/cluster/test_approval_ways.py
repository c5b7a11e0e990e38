"""The ways a held call reaches a person in a cluster, against a real API server, real tokens and RBAC (the chart's
ClusterRoles), a real redis-server, and the real runtime as the sandbox (a local process with its pod-bound token):

- an AgentTask (pooled): its held call listed and approved through the approval API on the other replica, and with
  `kubectl mcpexec` (no --session); its tool gets the real value exactly once; a denied one never runs; a plan
  (`approval: plan`) listed with its calls and approved at once;
- an AgentSession's execute stream: the approval request (tool, digest, tokenized arguments) and its decision are
  lines of the stream, as they happen;
- the MCP front door: the MCP SDK client answers the elicitation (accept, decline) when its user may approve; one
  who may not is told how to approve.

No operator runs in the first two (the claims and Ready status are written by the test); the front door's sessions
are the operator's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import kopf.testing
import mcp_types as types
import pytest
from kubernetes import client
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, VERSION
from mcpexec.kubectl_plugin import main as kubectl_mcpexec
from tests.cluster.kube import create_task, task_status, wait_for
from tests.cluster.test_approvals import _approver_role
from tests.cluster.test_gateway_pools import (
    POOL,
    POOL_ACCOUNT,
    _crm_server,
    _pod_token,
    _pool_account,
    _pool_pod,
    pool_runtime,
)
from tests.cluster.test_gateway_sessions import SessionsGateway, _ready_session, _session_user_role, _user
from tests.cluster.test_sessions import warm_pool
from tests.support.approval_code import RAW_EMAIL, campaign, sends
from tests.support.components import demo_over_http, free_port, redis_server
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask
from tests.support.session_api import stream

SENDS, PLAN = sends("crm"), campaign("crm")
CEILING = {"mcpServers": ["crm"], "tools": {"allow": ["crm/*"]}}


@pytest.fixture
def outbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo server's outbox (the crm server started by the test inherits it): what the tool really got."""
    path = tmp_path / "outbox.jsonl"
    monkeypatch.setenv("DEMO_OUTBOX", str(path))
    return path


def _sent(outbox: Path) -> list[str]:
    return [json.loads(line)["to"] for line in outbox.read_text().splitlines()] if outbox.exists() else []


def _claim(namespace: str, task: str, pod: dict[str, Any]) -> None:
    """The task's status as the operator writes it when it claims `pod` for it."""
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    claim = {"pool": POOL, "podName": name, "podUID": uid, "policy": CEILING}
    body = {"status": {"claim": claim, "launchType": "Warm", "podName": name, "phase": "Running"}}
    client.CustomObjectsApi().patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, AGENTTASK_PLURAL, task, body
    )


def _task_held(url: str, namespace: str, name: str, token: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def listed() -> bool:
        nonlocal found
        answer = httpx.get(
            f"{url}/v1/approvals/{namespace}/agenttasks/{name}", headers={"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 200, answer.text
        found = answer.json()["pending"]
        return len(found) == 1

    wait_for(listed, 60, "a held call of the task")
    return found


def _finished(runtime: Any, workspace: Path) -> dict[str, Any]:
    _stdout, stderr = runtime.communicate(timeout=90)
    result: dict[str, Any] = json.loads((workspace / "result.json").read_text())
    assert runtime.returncode == 0, (result, stderr)
    return result


@pytest.mark.timeout(400)
def test_a_pooled_tasks_held_calls_are_answered_through_the_approval_api_and_kubectl(
    cluster: ControlPlane, namespace: str, outbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    carol = _user(namespace, "carol", _approver_role())
    _pool_account(namespace)
    crm_port, polled_port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    spec = {"poolRef": {"name": POOL}, "mcpServers": ["crm"], "timeoutSeconds": 120}
    with (
        redis_server() as redis_url,
        demo_over_http(crm_port),
        SessionsGateway(cluster, polled_port, redis_url),
        SessionsGateway(cluster, None, redis_url) as other,
    ):
        plugin = ["--gateway", other.people_url, "--token", carol, "-n", namespace]
        # Approved through the approval API of the replica the sandbox does not talk to.
        pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-aaaaa")
        create_task(namespace, agenttask("approved", code=SENDS, approval={"tools": ["crm/send_*"]}, **spec))
        with pool_runtime(_pod_token(namespace, pod), polled_port) as (runtime, workspace):
            _claim(namespace, "approved", pod)
            (held,) = _task_held(other.people_url, namespace, "approved", carol)
            assert held["tool"] == "crm/send_message" and '"to": "[EMAIL_1]"' in held["arguments"]
            assert RAW_EMAIL not in json.dumps(held) and _sent(outbox) == []
            wait_for(lambda: (task_status(namespace, "approved").get("approvals") or {}).get("count") == 1, 30)
            kubectl_mcpexec([*plugin, "pending", "approved"])
            assert f"{held['digest'][:12]}  crm/send_message" in capsys.readouterr().out
            kubectl_mcpexec([*plugin, "approve", "approved", held["digest"][:12]])
            assert capsys.readouterr().out == (
                f"crm/send_message {held['digest'][:12]} approved by system:serviceaccount:{namespace}:carol\n"
            )
            assert _finished(runtime, workspace)["result"] == "sent sent\n"
        assert _sent(outbox) == [RAW_EMAIL]  # the real value, exactly once

        # Denied: the code gets ApprovalDenied with the reason; nothing is sent.
        pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-bbbbb")
        create_task(namespace, agenttask("denied", code=SENDS, approval={"tools": ["crm/send_*"]}, **spec))
        with pool_runtime(_pod_token(namespace, pod), polled_port) as (runtime, workspace):
            _claim(namespace, "denied", pod)
            (held,) = _task_held(other.people_url, namespace, "denied", carol)
            kubectl_mcpexec([*plugin, "deny", "denied", held["digest"][:12], "--reason", "not this quarter"])
            capsys.readouterr()
            assert _finished(runtime, workspace)["result"] == "denied: not this quarter\n"
        assert _sent(outbox) == [RAW_EMAIL]

        # A plan: the dry run's two sends listed at once (kubectl shows its calls), approved once, run for real.
        pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-ccccc")
        approval = {"tools": ["crm/send_*"], "mode": "plan"}
        create_task(namespace, agenttask("campaign", code=PLAN, approval=approval, **spec))
        with pool_runtime(_pod_token(namespace, pod), polled_port) as (runtime, workspace):
            _claim(namespace, "campaign", pod)
            (plan,) = _task_held(other.people_url, namespace, "campaign", carol)
            assert plan["tool"] == "plan" and [c["tool"] for c in plan["calls"]] == ["crm/send_message"] * 2
            kubectl_mcpexec([*plugin, "pending", "campaign"])
            listed = capsys.readouterr().out.splitlines()
            assert listed[1].startswith(f"{plan['digest'][:12]}  plan ") and listed[1].endswith("2 call(s):")
            assert [line.split(" ")[4] for line in listed[2:]] == ["crm/send_message"] * 2
            assert _sent(outbox) == [RAW_EMAIL]  # the dry run sent nothing
            kubectl_mcpexec([*plugin, "approve", "campaign", plan["digest"][:12]])
            assert capsys.readouterr().out == (
                f"plan {plan['digest'][:12]} approved by system:serviceaccount:{namespace}:carol\n"
            )
            assert _finished(runtime, workspace)["result"] == "C002 sent\nC003 sent\n"
        assert _sent(outbox) == [RAW_EMAIL, RAW_EMAIL, "chloe.dubois@example.fr"]


@pytest.mark.timeout(240)
def test_the_execute_stream_carries_the_approval_request_and_its_decision(
    cluster: ControlPlane, namespace: str, outbox: Path
) -> None:
    alice = _user(namespace, "alice", _session_user_role())
    carol = _user(namespace, "carol", _approver_role())
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-sssss")
    crm_port, polled_port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    _ready_session(namespace, "work", pod, CEILING, mcpServers=["crm"], approval={"tools": ["crm/send_*"]})
    with (
        redis_server() as redis_url,
        demo_over_http(crm_port),
        SessionsGateway(cluster, polled_port, redis_url) as polled,
        SessionsGateway(cluster, None, redis_url) as other,
        pool_runtime(_pod_token(namespace, pod), polled_port),
        httpx.Client() as http,
    ):

        def approve(line: dict[str, Any]) -> None:  # the person answers as the request arrives, on the other replica
            if line["kind"] == "approval" and line["state"] == "pending":
                answer = http.post(
                    f"{other.people_url}/v1/approvals/{namespace}/agentsessions/work/{line['digest']}",
                    json={"decision": "approve", "reason": "looks right"},
                    headers={"Authorization": f"Bearer {carol}"},
                )
                assert answer.status_code == 200, answer.text

        lines = stream(http, polled.people_url, namespace, "work", alice, SENDS, approve)
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "execution" and kinds[-1] == "outcome"
    requested, decided = (line for line in lines if line["kind"] == "approval")
    assert requested["state"] == "pending" and requested["tool"] == "crm/send_message"
    assert '"to": "[EMAIL_1]"' in requested["arguments"] and RAW_EMAIL not in json.dumps(lines)
    assert decided == {
        "kind": "approval",
        "state": "approved",
        "tool": "crm/send_message",
        "digest": requested["digest"],
        "approver": f"system:serviceaccount:{namespace}:carol",
        "reason": "looks right",
    }
    assert kinds.index("approval") < kinds.index("output")  # asked before the code printed what it sent
    assert lines[-1]["outcome"]["stdout"] == "sent sent\n"
    assert _sent(outbox) == [RAW_EMAIL]


@pytest.fixture
def approving_pool(cluster: ControlPlane, namespace: str, outbox: Path) -> Iterator[SessionsGateway]:
    """A warm pool of two whose template asks for approval of crm/send_*, each sandbox the real runtime; the gateway
    (held calls in its process, no Redis)."""
    pods = warm_pool(namespace, POOL, 2, mcpServers=["crm"], approval={"tools": ["crm/send_*"]})
    crm_port, gateway_port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    tokens = [_pod_token(namespace, client.ApiClient().sanitize_for_serialization(pod)) for pod in pods]
    with (
        demo_over_http(crm_port),
        SessionsGateway(cluster, gateway_port) as gateway,
        pool_runtime(tokens[0], gateway_port),
        pool_runtime(tokens[1], gateway_port),
    ):
        yield gateway


@pytest.mark.timeout(300)
def test_the_front_door_asks_its_clients_user_through_elicitation(
    operator: kopf.testing.KopfRunner, namespace: str, approving_pool: SessionsGateway, outbox: Path
) -> None:
    # Dora runs sessions and may approve their calls; Sam only runs sessions.
    dora = _user(namespace, "dora", _session_user_role())
    client.RbacAuthorizationV1Api().create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "dora-approves"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": _approver_role()},
            "subjects": [{"kind": "ServiceAccount", "name": "dora", "namespace": namespace}],
        },
    )
    sam = _user(namespace, "sam", _session_user_role())
    url = f"{approving_pool.people_url}/mcp/{namespace}/{POOL}"
    asked: list[str] = []
    answers = iter(["accept", "decline"])

    async def answer(_context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        action = next(answers)
        return types.ElicitResult(action=action, content={"note": ""} if action == "accept" else None)

    async def use(token: str, runs: int) -> list[types.CallToolResult]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
        transport = streamable_http_client(url, http_client=http)
        async with http, Client(transport, mode="legacy", elicitation_callback=answer) as mcp:
            return [await mcp.call_tool("execute_code", {"code": SENDS, "timeoutSeconds": 60}) for _ in range(runs)]

    approved, declined = asyncio.run(use(dora, 2))
    assert approved.structured_content is not None and approved.structured_content["stdout"] == "sent sent\n"
    assert declined.structured_content is not None
    assert declined.structured_content["stdout"] == "denied: declined in the MCP client\n"
    assert len(asked) == 2 and "crm/send_message" in asked[0] and "[EMAIL_1]" in asked[0]
    assert RAW_EMAIL not in asked[0]
    assert _sent(outbox) == [RAW_EMAIL]

    # Sam's client could be asked, but Sam may not approve (RBAC): not asked, told how and by whom instead.
    (refused,) = asyncio.run(use(sam, 1))
    assert refused.is_error and len(asked) == 2
    text = refused.content[0].text if isinstance(refused.content[0], types.TextContent) else ""
    assert "approval_required (execution " in text and "you may not approve it" in text
    assert "kubectl mcpexec approve mcp-" in text and "the chart's approver role" in text
    assert _sent(outbox) == [RAW_EMAIL]
