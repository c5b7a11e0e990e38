"""AgentSessions on the e2e node, as a person uses them: their own ServiceAccount token bound to the chart's
session-user ClusterRole, the execute API on a gateway replica's sessions port (reached at the pod's IP from the
host, as an Ingress would), and a SandboxPool of real gVisor sandboxes behind it."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from mcpexec.api.meta import AGENTSESSION_PLURAL, SANDBOXPOOL_PLURAL
from tests.e2e.release import API_VERSION, GROUP, RELEASE_NAMESPACE

SESSION_USER_ROLE = "mcpexec-session-user"  # the release's (named mcpexec) ClusterRole for session users
APPROVER_ROLE = "mcpexec-approver"  # ...and for those who answer held tool calls (docs/approvals.md)
SESSIONS_PORT = 8080


def session_user(namespace: str, name: str, role: str = SESSION_USER_ROLE) -> str:
    """A ServiceAccount standing for a person, bound to one of the release's ClusterRoles (the session user's unless
    told) in `namespace`; its token."""
    core, rbac = client.CoreV1Api(), client.RbacAuthorizationV1Api()
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": f"{name}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    })  # fmt: skip
    answer = core.create_namespaced_service_account_token(name, namespace, {"spec": {"expirationSeconds": 3600}})
    return str(answer.status.token)


def gateway_urls() -> list[str]:
    """Each gateway replica's sessions port."""
    pods = client.CoreV1Api().list_namespaced_pod(
        RELEASE_NAMESPACE, label_selector="app.kubernetes.io/name=mcpexec-gateway"
    )
    return sorted(f"http://{p.status.pod_ip}:{SESSIONS_PORT}" for p in pods.items if p.status.pod_ip)


def create_pool(namespace: str, name: str, replicas: int, template: dict[str, Any]) -> None:
    body = {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": "SandboxPool", "metadata": {"name": name},
            "spec": {"replicas": replicas, "template": template}}  # fmt: skip
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, API_VERSION, namespace, SANDBOXPOOL_PLURAL, body)


def pool_ready(namespace: str, name: str) -> int:
    pool = client.CustomObjectsApi().get_namespaced_custom_object(
        GROUP, API_VERSION, namespace, SANDBOXPOOL_PLURAL, name
    )
    return int((pool.get("status") or {}).get("readyReplicas", 0))


def wait_pool(namespace: str, name: str, replicas: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while pool_ready(namespace, name) < replicas:
        assert time.monotonic() < deadline, f"pool {name}: {pool_ready(namespace, name)} of {replicas} ready"
        time.sleep(0.2)


def create_session(namespace: str, name: str, pool: str, **spec: Any) -> None:
    body = {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentSession", "metadata": {"name": name},
            "spec": {"poolRef": {"name": pool}, **spec}}  # fmt: skip
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, API_VERSION, namespace, AGENTSESSION_PLURAL, body)


def session_status(namespace: str, name: str) -> dict[str, Any]:
    found = client.CustomObjectsApi().get_namespaced_custom_object(
        GROUP, API_VERSION, namespace, AGENTSESSION_PLURAL, name
    )
    return dict(found.get("status") or {})


def wait_session(namespace: str, name: str, phase: str, timeout: float = 120, every: float = 0.2) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (status := session_status(namespace, name)).get("phase") != phase:
        assert time.monotonic() < deadline, f"session {name} not {phase}: {status}"
        time.sleep(every)
    return status
