"""The chart installed on the e2e node as a user would install it, and what the tests put beside it: our demo MCP
server as an MCPServer, and waiting for AgentTasks to finish."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

from kubernetes import client
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.node import Node
from tests.e2e.node_artifacts import PROJECT_VERSION, project_image
from tests.e2e.pods import wait_phase
from tests.support.chart import CHART, HELM

GROUP, API_VERSION, PLURAL = "mcpexec.dev", "v1alpha1", "agenttasks"


RELEASE_NAMESPACE = "mcpexec-system"
WORKSPACE_SIZE = "32Mi"  # the release's (tasks.workspaceSize): small, so a task can go over it quickly
VAULT = f"mcpexec-redis.{RELEASE_NAMESPACE}.svc.cluster.local"  # the chart's bundled Redis Service
REDIS_CLAIM, REDIS_UID = "mcpexec-redis-data", 999  # the bundled Redis' claim (its append-only file) and user
REDIS_DATA = "redis-data"  # the hostPath volume bound to that claim, in the node's directory


def redis_volume(e2e_node: Node) -> None:
    """No provisioner on this node: the bundled Redis' claim is bound to a hostPath volume in the node's directory,
    owned by Redis' user (a hostPath is not chowned to the pod's fsGroup)."""
    volume = e2e_node.workdir / REDIS_DATA
    volume.mkdir(exist_ok=True)
    os.chown(volume, REDIS_UID, REDIS_UID)
    client.CoreV1Api().create_persistent_volume({
        "metadata": {"name": "mcpexec-e2e-redis"},
        "spec": {
            "capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": str(volume), "type": "Directory"},
            "claimRef": {"namespace": RELEASE_NAMESPACE, "name": REDIS_CLAIM},
        },
    })  # fmt: skip


def install_release(e2e_node: Node, *values: str) -> str:
    """The chart installed in mcpexec-system as a user would, its bundled Redis from our redis image (the
    chart's default redis:7.2-alpine cannot be pulled here)."""
    for name in ("controller", "gateway", "runtime", "redis"):
        e2e_node.import_image(project_image(name))
    redis_volume(e2e_node)
    started = time.monotonic()
    out = subprocess.run(
        [str(HELM), "install", "mcpexec", str(CHART), "-n", RELEASE_NAMESPACE, "--create-namespace", "--wait",
         "--timeout", "180s", "--set", "images.redis.repository=mcpexec/redis",
         "--set", f"images.redis.tag={PROJECT_VERSION}", "--set", f"tasks.workspaceSize={WORKSPACE_SIZE}", *values],
        capture_output=True, text=True, env=e2e_node.cp.env(),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    print(f"helm install --wait: {time.monotonic() - started:.1f}s")
    return RELEASE_NAMESPACE


def wait_task(
    custom: client.CustomObjectsApi, name: str, namespace: str = "default", timeout: float = 150
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = custom.get_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL, name)
        if task.get("status", {}).get("phase") in ("Succeeded", "Failed", "TimedOut"):
            return task  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, task.get("status")
        time.sleep(0.5)


def crm_server(core: client.CoreV1Api, custom: client.CustomObjectsApi, namespace: str, **spec: Any) -> str:
    """Our demo MCP server in a pod (the gateway image) behind Service `crm`, and MCPServer `crm` naming it over
    streamable HTTP (with more of its `spec`, e.g. `approval`); returns the pod's IP once it is Ready (listening)."""
    demo = {
        "metadata": {"name": "crm", "labels": {"app": "crm"}},
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{
                "name": "crm", "image": f"docker.io/mcpexec/gateway:{PROJECT_VERSION}", "imagePullPolicy": "Never",
                "command": ["python3", "-m", "mcpexec.demo_server", "--http", "8080", "--host", "0.0.0.0"],
                "ports": [{"containerPort": 8080}],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
            }],
        },
    }  # fmt: skip
    core.create_namespaced_pod(namespace, demo)
    core.create_namespaced_service(
        namespace, {"metadata": {"name": "crm"}, "spec": {"selector": {"app": "crm"}, "ports": [{"port": 8080}]}}
    )
    custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, "mcpservers", {
        "apiVersion": f"{GROUP}/{API_VERSION}", "kind": "MCPServer", "metadata": {"name": "crm"},
        "spec": {"transport": "streamableHttp", "url": f"http://crm.{namespace}.svc.cluster.local:8080/mcp", **spec},
    })  # fmt: skip
    running = wait_phase(core, namespace, "crm", {"Running"})
    deadline = time.monotonic() + 60
    while not any(c.type == "Ready" and c.status == "True" for c in running.status.conditions or []):
        assert time.monotonic() < deadline, running.status
        time.sleep(0.5)
        running = core.read_namespaced_pod("crm", namespace)
    return str(running.status.pod_ip)


async def sent_messages(url: str) -> list[dict[str, Any]]:
    """The demo MCP server's outbox (what `send_message` received), asked from the host at the pod's `url`."""
    async with Client(streamable_http_client(url), mode="legacy", cache=None) as crm:
        answer = await crm.call_tool("sent_messages", {})
    assert answer.structured_content is not None, answer
    return list(answer.structured_content["result"])


def gateway_records(core: client.CoreV1Api, release: str) -> dict[str, list[dict[str, Any]]]:
    """Per gateway pod of the release, the structured (JSON) records of its log: audit records among them."""
    pods = core.list_namespaced_pod(release, label_selector="app.kubernetes.io/name=mcpexec-gateway").items
    return {
        gateway.metadata.name: [
            json.loads(line)
            for line in core.read_namespaced_pod_log(gateway.metadata.name, release).splitlines()
            if line.startswith("{")
        ]
        for gateway in pods
    }
