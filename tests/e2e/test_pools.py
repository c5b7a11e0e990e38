"""Warm pools on the node: a SandboxPool of real gVisor pods, started before any task; tasks claim them and succeed
with their results in status; a sandbox nobody claimed gets nothing from the gateway; a claimed sandbox serves one
task and is gone; a killed idle sandbox is replaced."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from mcpexec.api.meta import POOL_LABEL, SANDBOX_STATE_LABEL, SANDBOXPOOL_PLURAL
from tests.e2e.node import Node
from tests.e2e.node_artifacts import PROJECT_VERSION
from tests.e2e.pods import run_to_completion
from tests.e2e.release import API_VERSION, GROUP, PLURAL, crm_server, wait_task

pytestmark = pytest.mark.e2e

POOL = "warm"
TEMPLATE = {
    "mcpServers": ["crm"],
    "tools": {"allow": ["crm/*"]},
    "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
}
# Prints the sandbox's pod name (its hostname): which sandbox ran the task.
TASK_CODE = """
import socket
from servers.crm import get_customer
print("sandbox:", socket.gethostname())
print("customer:", get_customer(customer_id="C001")["email"])
"""
# A pod of the pool's ServiceAccount (so its token is a pool sandbox's) that no claim names: what an idle sandbox
# gets from the gateway.
UNCLAIMED_CODE = """
import http.client, json, os, urllib.parse
url = urllib.parse.urlsplit(os.environ["MCPEXEC_GATEWAY_URL"])
token = open(os.environ["MCPEXEC_TOKEN_FILE"]).read().strip()
def ask(method, path, body=None):
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    answer = conn.getresponse()
    raw = answer.read()
    code = json.loads(raw).get("error", {}).get("code") if raw else ""
    return f"{answer.status}:{code}"
print("servers", ask("GET", "/v1/servers"))
print("call", ask("POST", "/v1/tools/crm/get_customer/call", {"arguments": {"customer_id": "C001"}}))
print("assignment", ask("GET", "/v1/assignment?wait=1"))
"""


def _pool_status(custom: client.CustomObjectsApi, namespace: str) -> dict[str, Any]:
    pool: dict[str, Any] = custom.get_namespaced_custom_object(GROUP, API_VERSION, namespace, SANDBOXPOOL_PLURAL, POOL)
    return dict(pool.get("status") or {})


def _wait_ready(custom: client.CustomObjectsApi, namespace: str, replicas: int, timeout: float = 240) -> float:
    started = time.monotonic()
    while _pool_status(custom, namespace).get("readyReplicas", 0) < replicas:
        assert time.monotonic() - started < timeout, _pool_status(custom, namespace)
        time.sleep(0.5)
    return time.monotonic() - started


def _idle_pods(core: client.CoreV1Api, namespace: str, ready_only: bool = False) -> list[str]:
    pods = core.list_namespaced_pod(namespace, label_selector=f"{POOL_LABEL}={POOL},{SANDBOX_STATE_LABEL}=idle")
    return sorted(
        p.metadata.name
        for p in pods.items
        if p.metadata.deletion_timestamp is None
        and (not ready_only or any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or []))
    )


def _run_task(custom: client.CustomObjectsApi, namespace: str, name: str) -> tuple[dict[str, Any], float]:
    task = {
        "apiVersion": f"{GROUP}/{API_VERSION}",
        "kind": "AgentTask",
        "metadata": {"name": name},
        "spec": {"poolRef": {"name": POOL}, "mcpServers": ["crm"], "timeoutSeconds": 120, "code": TASK_CODE},
    }
    started = time.monotonic()
    custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL, task)
    status = wait_task(custom, name, namespace)["status"]
    return status, time.monotonic() - started


def _unclaimed_probe(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "unclaimed",
            # The pool's labels (its NetworkPolicy lets it reach the gateway) but no sandbox state: the operator
            # neither counts nor claims it.
            "labels": {"app.kubernetes.io/managed-by": "mcpexec", "app.kubernetes.io/name": "mcpexec-sandbox",
                       POOL_LABEL: POOL},
        },
        "spec": {
            "runtimeClassName": "gvisor", "restartPolicy": "Never", "serviceAccountName": f"mcpexec-pool-{POOL}",
            "automountServiceAccountToken": False, "enableServiceLinks": False,
            "containers": [{
                "name": "main", "image": f"docker.io/mcpexec/runtime:{PROJECT_VERSION}", "imagePullPolicy": "Never",
                "command": ["python3", "-c", UNCLAIMED_CODE],
                "env": [
                    {"name": "MCPEXEC_GATEWAY_URL", "value": "http://mcpexec-gateway.mcpexec-system.svc:8000"},
                    {"name": "MCPEXEC_TOKEN_FILE", "value": "/var/run/secrets/mcpexec/token"},
                ],
                "volumeMounts": [{"name": "token", "mountPath": "/var/run/secrets/mcpexec", "readOnly": True}],
            }],
            "volumes": [{"name": "token", "projected": {"sources": [
                {"serviceAccountToken": {"audience": "mcpexec-gateway", "expirationSeconds": 600, "path": "token"}}
            ]}}],
        },
    }  # fmt: skip


def test_tasks_claim_warm_gvisor_sandboxes_once_each(
    e2e_node: Node, release: str, core: client.CoreV1Api, namespace: str
) -> None:
    custom = client.CustomObjectsApi()
    crm_server(core, custom, namespace)
    pool = {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": "SandboxPool", "metadata": {"name": POOL},
            "spec": {"replicas": 2, "template": TEMPLATE}}  # fmt: skip
    custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, SANDBOXPOOL_PLURAL, pool)
    print(f"pool of 2 ready in {_wait_ready(custom, namespace, 2):.1f}s")
    idle = _idle_pods(core, namespace)
    for name in idle:
        assert core.read_namespaced_pod(name, namespace).spec.runtime_class_name == "gvisor"

    # A pool sandbox no task claimed reaches nothing: no discovery, no tool, no task.
    log = run_to_completion(core, namespace, _unclaimed_probe(namespace))
    assert "servers 403:sandbox_not_claimed" in log and "call 403:sandbox_not_claimed" in log, log
    assert "assignment 204:" in log, log

    first, first_seconds = _run_task(custom, namespace, "first")
    assert first["phase"] == "Succeeded", first
    assert first["launchType"] == "Warm" and first["claim"]["podName"] in idle, first
    assert f"sandbox: {first['claim']['podName']}" in first["result"], first["result"]
    assert "customer: [EMAIL_1]" in first["result"], first["result"]  # PII tokenized for the pooled task too
    print(f"warm task create -> Succeeded: {first_seconds:.2f}s")
    # The task's result reaches its status through the gateway before its pod exits (docs/agenttask.md): wait for it.
    deadline = time.monotonic() + 60
    while (spent := core.read_namespaced_pod(first["claim"]["podName"], namespace)).status.phase == "Running":
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert spent.status.phase == "Succeeded", "a claimed sandbox runs its one task, then exits"
    assert spent.metadata.labels[SANDBOX_STATE_LABEL] == "claimed"

    _wait_ready(custom, namespace, 2)  # refilled
    second, _ = _run_task(custom, namespace, "second")
    assert second["phase"] == "Succeeded" and second["launchType"] == "Warm", second
    assert second["claim"]["podName"] != first["claim"]["podName"], "a sandbox is never reused"

    # Killing an idle sandbox: the pool starts another.
    _wait_ready(custom, namespace, 2)
    victim = _idle_pods(core, namespace)[0]
    core.delete_namespaced_pod(victim, namespace, grace_period_seconds=0)
    deadline = time.monotonic() + 240
    while (idle := _idle_pods(core, namespace, ready_only=True)) != sorted(set(idle) - {victim}) or len(idle) < 2:
        assert time.monotonic() < deadline, (idle, _pool_status(custom, namespace))
        time.sleep(0.5)
    events = {e.reason for e in core.list_namespaced_event(namespace).items}
    assert {"Claimed", "Refilled"} <= events, events
    assert _pool_status(custom, namespace)["claimedReplicas"] == 0, "both tasks are done"
