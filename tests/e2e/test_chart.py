"""The chart on the node: helm installs it (the project's images imported, Redis on the host), and an
AgentTask applied like a user would runs as the operator's Job under gVisor; its result lands in
AgentTask.status; deleting the task removes its Job and pod."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.node import Node, host_ip, kubectl_binary, project_image
from tests.support.chart import CHART, HELM
from tests.support.components import free_port

pytestmark = pytest.mark.e2e

GROUP, API_VERSION, PLURAL = "mcpexec.dev", "v1alpha1", "agenttasks"


@pytest.fixture(scope="module")
def release(e2e_node: Node) -> Iterator[str]:
    """The chart installed in mcpexec-system; the PII vault is a redis-server on the node's address."""
    port = free_port()
    redis = subprocess.Popen(
        ["redis-server", "--bind", host_ip(), "--port", str(port), "--save", "", "--protected-mode", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for name in ("controller", "gateway", "runtime"):
            e2e_node.import_image(project_image(name))
        started = time.monotonic()
        out = subprocess.run(
            [str(HELM), "install", "mcpexec", str(CHART), "-n", "mcpexec-system",
             "--create-namespace", "--wait", "--timeout", "180s", "--set", "redis.enabled=false",
             "--set", f"redis.external.url=redis://{host_ip()}:{port}/0"],
            capture_output=True, text=True, env=e2e_node.cp.env(),
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        print(f"helm install --wait: {time.monotonic() - started:.1f}s")
        yield "mcpexec-system"
    finally:
        redis.terminate()
        redis.wait(timeout=10)


def wait_task(custom: client.CustomObjectsApi, name: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = custom.get_namespaced_custom_object(GROUP, API_VERSION, "default", PLURAL, name)
        if task.get("status", {}).get("phase") in ("Succeeded", "Failed", "TimedOut"):
            return task  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, task.get("status")
        time.sleep(0.5)


def test_a_direct_code_task_runs_under_gvisor_and_its_result_lands_in_status(e2e_node: Node, release: str) -> None:
    task = {
        "apiVersion": f"{GROUP}/{API_VERSION}",
        "kind": "AgentTask",
        "metadata": {"name": "hello"},
        "spec": {"timeoutSeconds": 60, "code": "import platform\nprint('kernel:', platform.release())\n"},
    }
    kubectl = [str(kubectl_binary()), "--kubeconfig", str(e2e_node.cp.kubeconfig)]
    started = time.monotonic()
    subprocess.run([*kubectl, "apply", "-n", "default", "-f", "-"], input=json.dumps(task), text=True, check=True)
    custom = client.CustomObjectsApi()
    done = wait_task(custom, "hello")
    print(f"AgentTask Succeeded after {time.monotonic() - started:.1f}s")
    status = done["status"]
    assert status["phase"] == "Succeeded", status
    assert "gvisor" in status["result"], status
    job = client.BatchV1Api().read_namespaced_job(status["jobName"], "default")
    assert job.spec.template.spec.runtime_class_name == "gvisor"

    custom.delete_namespaced_custom_object(GROUP, API_VERSION, "default", PLURAL, "hello")
    deadline = time.monotonic() + 60
    while True:
        try:
            client.BatchV1Api().read_namespaced_job(status["jobName"], "default")
        except ApiException as exc:
            assert exc.status == 404
            break
        assert time.monotonic() < deadline, "the task's Job outlived the task"
        time.sleep(0.5)
    pods = client.CoreV1Api().list_namespaced_pod("default", label_selector=f"job-name={status['jobName']}")
    deadline = time.monotonic() + 60
    while pods.items:
        assert time.monotonic() < deadline, [p.metadata.name for p in pods.items]
        time.sleep(0.5)
        pods = client.CoreV1Api().list_namespaced_pod("default", label_selector=f"job-name={status['jobName']}")
