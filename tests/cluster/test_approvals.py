"""Held tool calls against a real API server, real tokens and RBAC (the chart's session-user and approver
ClusterRoles), a real redis-server and two gateway replicas: an AgentSession's sandbox (the real runtime, a local
process with its pod-bound token) polls one replica, its person executes code through it, and the held call is
listed and answered through the other (the approval API: TokenReview, then a SubjectAccessReview on
`agentsessions/approve`). Approved, the tool runs once; denied, the code gets ApprovalDenied and the same exact call
stays refused; undecided by the deadline, ApprovalTimeout. Who may approve is RBAC's: no right, 403; the session's
own user, 403 until granted the approver role. An approval names one digest: replayed, it changes nothing, and it
never releases another call. No operator runs here: the session's Ready status is written by the test."""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from kubernetes import client

from mcpexec.kubectl_plugin import main as kubectl_mcpexec
from tests.cluster.kube import wait_for
from tests.cluster.test_gateway_pools import (
    POOL_ACCOUNT,
    _crm_server,
    _pod_token,
    _pool_account,
    _pool_pod,
    pool_runtime,
)
from tests.cluster.test_gateway_sessions import (
    SessionsGateway,
    _execute,
    _ready_session,
    _session_user_role,
    _user,
    chart_cluster_role,
)
from tests.cluster.test_sessions import session_status
from tests.support.components import demo_over_http, free_port, redis_server
from tests.support.control_plane import ControlPlane

# Gets one customer (the call needs approval), saying what became of it.
GETS = """import json
try:
    print(json.dumps({"got": call_tool("crm/get_customer", {"customer_id": "%s"})["id"]}))
except ApprovalDenied as exc:
    print(json.dumps({"denied": exc.reason, "status": exc.status}))
except ApprovalTimeout as exc:
    print(json.dumps({"timeout": exc.code, "status": exc.status}))"""


def _approver_role() -> str:
    return chart_cluster_role("-approver")


def _grant(namespace: str, account: str, role: str) -> None:
    binding = {
        "metadata": {"name": f"{account}-approves"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    client.RbacAuthorizationV1Api().create_namespaced_role_binding(namespace, binding)


def _pending(url: str, namespace: str, name: str, token: str) -> httpx.Response:
    return httpx.get(
        f"{url}/v1/approvals/{namespace}/agentsessions/{name}", headers={"Authorization": f"Bearer {token}"}
    )


def _decide(url: str, namespace: str, name: str, token: str, digest: str, decision: str, reason: str = "") -> Any:
    return httpx.post(
        f"{url}/v1/approvals/{namespace}/agentsessions/{name}/{digest}",
        json={"decision": decision, "reason": reason},
        headers={"Authorization": f"Bearer {token}"},
    )


def _held(url: str, namespace: str, name: str, token: str, count: int = 1) -> list[dict[str, Any]]:
    """The session's held calls once there are `count` of them (through the approval API)."""
    found: list[dict[str, Any]] = []

    def listed() -> bool:
        nonlocal found
        answer = _pending(url, namespace, name, token)
        assert answer.status_code == 200, answer.text
        found = answer.json()["pending"]
        return len(found) == count

    wait_for(listed, 30, f"{count} held call(s)")
    return found


def _printed(answer: Future[httpx.Response]) -> dict[str, Any]:
    response = answer.result(timeout=90)
    assert response.status_code == 200, response.text
    assert response.json()["error"] is None, response.json()
    return dict(json.loads(response.json()["stdout"]))


def _events(namespace: str, name: str) -> list[str]:
    listed = client.CoreV1Api().list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
    return [event.reason for event in listed.items]


@pytest.mark.timeout(300)
def test_held_calls_are_answered_by_whom_rbac_allows_through_either_replica(
    cluster: ControlPlane, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    user_role, approver_role = _session_user_role(), _approver_role()
    alice = _user(namespace, "alice", user_role)  # runs code in the session
    carol = _user(namespace, "carol", approver_role)
    mallory = _user(namespace, "mallory", None)
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-aaaaa")
    crm_port, polled_port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    _ready_session(namespace, "work", pod, mcpServers=["crm"], approval={"tools": ["crm/get_customer"]})
    with (
        redis_server() as redis_url,
        demo_over_http(crm_port),
        SessionsGateway(cluster, polled_port, redis_url) as polled,
        SessionsGateway(cluster, None, redis_url) as other,
        pool_runtime(_pod_token(namespace, pod), polled_port),
        ThreadPoolExecutor(1) as pool,
    ):
        # Held on the replica the sandbox talks to; listed and answered through the other.
        running = pool.submit(_execute, polled.people_url, namespace, "work", alice, GETS % "C001", 60)
        (held,) = _held(other.people_url, namespace, "work", carol)
        assert held["tool"] == "crm/get_customer" and held["arguments"] == '{"customer_id": "C001"}'
        digest = held["digest"]
        wait_for(lambda: (session_status(namespace, "work").get("approvals") or {}).get("count") == 1, 30, "status")
        status = session_status(namespace, "work")
        assert status["approvals"]["pending"][0]["digest"] == digest
        awaiting = next(c for c in status["conditions"] if c["type"] == "AwaitingApproval")
        assert (awaiting["status"], awaiting["reason"]) == ("True", "CallsHeld")

        # No right, no decision: nobody, and the session's own user until granted; listing needs `get` too.
        assert _pending(other.people_url, namespace, "work", mallory).status_code == 403
        assert _decide(other.people_url, namespace, "work", mallory, digest, "approve").status_code == 403
        own = _decide(other.people_url, namespace, "work", alice, digest, "approve")
        assert (own.status_code, own.json()["error"]["code"]) == (403, "forbidden"), own.text
        assert _decide(other.people_url, namespace, "work", "garbage", digest, "approve").status_code == 401
        # A digest this session never held is no call of it.
        assert _decide(other.people_url, namespace, "work", carol, "0" * 64, "approve").status_code == 404
        assert not running.done()

        approved = _decide(other.people_url, namespace, "work", carol, digest, "approve")
        assert approved.status_code == 200, approved.text
        assert approved.json() == {
            "digest": digest,
            "tool": "crm/get_customer",
            "state": "approved",
            "approver": f"system:serviceaccount:{namespace}:carol",
        }
        assert _printed(running) == {"got": "C001"}
        # Replayed, the approval changes nothing: the call it named ran once, and it releases no other call.
        replay = _decide(other.people_url, namespace, "work", carol, digest, "approve")
        assert (replay.status_code, replay.json()["error"]["code"]) == (409, "already_decided")
        second = pool.submit(_execute, polled.people_url, namespace, "work", alice, GETS % "C002", 60)
        (other_call,) = _held(other.people_url, namespace, "work", carol)
        assert other_call["digest"] != digest
        assert _decide(other.people_url, namespace, "work", carol, digest, "approve").status_code == 409
        assert not second.done() and len(_held(other.people_url, namespace, "work", carol)) == 1

        # Denied: the code gets ApprovalDenied with the reason; the same exact call is refused at once after.
        denied = _decide(other.people_url, namespace, "work", carol, other_call["digest"], "deny", "not this one")
        assert denied.status_code == 200 and denied.json()["state"] == "denied", denied.text
        assert _printed(second) == {"denied": "not this one", "status": 403}
        again = _execute(polled.people_url, namespace, "work", alice, GETS % "C002", 60)
        assert json.loads(again.json()["stdout"]) == {"denied": "not this one", "status": 403}
        assert _held(other.people_url, namespace, "work", carol, 0) == []

        # The session's user, granted the approver role, may approve (the same call again needs a new approval).
        _grant(namespace, "alice", approver_role)
        third = pool.submit(_execute, polled.people_url, namespace, "work", alice, GETS % "C001", 60)
        (again_held,) = _held(other.people_url, namespace, "work", alice)
        assert again_held["digest"] == digest  # the same exact call: the same digest, held anew
        # ...through `kubectl mcpexec` (its console script's main), the digest by a prefix as `pending` shows it.
        plugin = ["--gateway", polled.people_url, "--token", alice, "-n", namespace, "--session"]
        kubectl_mcpexec([*plugin, "pending", "work"])
        assert f"{digest[:12]}  crm/get_customer" in capsys.readouterr().out
        kubectl_mcpexec([*plugin, "approve", "work", digest[:12]])
        assert capsys.readouterr().out == (
            f"crm/get_customer {digest[:12]} approved by system:serviceaccount:{namespace}:alice\n"
        )
        assert _printed(third) == {"got": "C001"}

        wait_for(lambda: session_status(namespace, "work")["approvals"]["count"] == 0, 30, "status cleared")
        cleared = next(c for c in session_status(namespace, "work")["conditions"] if c["type"] == "AwaitingApproval")
        assert cleared["status"] == "False"
        wait_for(lambda: {"ApprovalRequested", "CallApproved", "CallDenied"} <= set(_events(namespace, "work")), 30)


@pytest.mark.timeout(180)
def test_a_call_not_decided_by_the_deadline_raises_approval_timeout(cluster: ControlPlane, namespace: str) -> None:
    alice = _user(namespace, "alice", _session_user_role())
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-ttttt")
    crm_port, port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    # A session's held call waits until its lifetime's end, less a tenth of it.
    spec = {"mcpServers": ["crm"], "approval": {"tools": ["crm/*"]}, "maxLifetimeSeconds": 12}
    _ready_session(namespace, "brief", pod, idleTimeoutSeconds=12, **spec)
    with (
        redis_server() as redis_url,
        demo_over_http(crm_port),
        SessionsGateway(cluster, port, redis_url) as gateway,
        pool_runtime(_pod_token(namespace, pod), port),
    ):
        answer = _execute(gateway.people_url, namespace, "brief", alice, GETS % "C001", 40)
        assert json.loads(answer.json()["stdout"]) == {"timeout": "approval_timeout", "status": 408}
        wait_for(lambda: "ApprovalTimedOut" in _events(namespace, "brief"), 30, "the timeout's Event")
