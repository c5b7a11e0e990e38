"""Helpers for the cluster tests: CRDs, namespaces, AgentTasks, waiting, and playing the kubelet."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, VERSION
from tests.support.components import CACHE_ROOT, REPO
from tests.support.control_plane import ControlPlane

T = TypeVar("T")
# kubectl v1.34 (installed by tests/setup/install.sh next to helm).
KUBECTL = CACHE_ROOT / "k8s-tools-2.2.2" / "kubectl"


def kubectl(cluster: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    """The real kubectl against the test control plane."""
    return subprocess.run([str(KUBECTL), *args], env=cluster.env(), capture_output=True, text=True, check=False)


def wait_for(probe: Callable[[], T | None], timeout: float = 60, what: str = "condition") -> T:
    """Poll until probe() returns something truthy; fail with what it was waiting for."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


def install_crds() -> None:
    ext = client.ApiextensionsV1Api()
    for path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        try:
            ext.create_custom_resource_definition(crd)
        except ApiException as exc:
            if exc.status != 409:
                raise

        def established(name: str = crd["metadata"]["name"]) -> bool:
            conditions = ext.read_custom_resource_definition(name).status.conditions or []
            return any(c.type == "Established" and c.status == "True" for c in conditions)

        wait_for(established, 30, f"CRD {crd['metadata']['name']} Established")


def ensure_runtime_class(name: str) -> None:
    body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": "runsc"}
    try:
        client.NodeV1Api().create_runtime_class(body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def create_namespace() -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    client.CoreV1Api().create_namespace({"metadata": {"name": name}})
    return name


def create_task(namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = client.CustomObjectsApi().create_namespaced_custom_object(
        GROUP, VERSION, namespace, AGENTTASK_PLURAL, body, field_validation="Strict"
    )
    return created


def read_task(namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi().get_namespaced_custom_object(
        GROUP, VERSION, namespace, AGENTTASK_PLURAL, name
    )
    return found


def task_status(namespace: str, name: str) -> dict[str, Any]:
    return read_task(namespace, name).get("status") or {}


def wait_phase(namespace: str, name: str, phase: str, timeout: float = 60) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        status = task_status(namespace, name)
        return status if status.get("phase") == phase else None

    return wait_for(probe, timeout, f"{namespace}/{name} phase {phase}")


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    for cond in status.get("conditions") or []:
        if cond["type"] == type_:
            return dict(cond)
    raise AssertionError(f"no {type_} condition in {status}")


def job_pod(namespace: str, job_name: str) -> client.V1Pod:
    """The pod the real Job controller created for the Job."""

    def probe() -> client.V1Pod | None:
        pods = client.CoreV1Api().list_namespaced_pod(namespace, label_selector=f"job-name={job_name}").items
        return pods[0] if pods else None

    return wait_for(probe, 60, f"pod of job {job_name}")


def job_pod_of(namespace: str, job_name: str, task_uid: str) -> client.V1Pod:
    """The pod of the Job of that name that the task `task_uid` owns (an earlier task's may still be collected)."""

    def probe() -> client.V1Pod | None:
        jobs = {
            j.metadata.uid
            for j in client.BatchV1Api().list_namespaced_job(namespace).items
            if j.metadata.name == job_name and task_uid in {r.uid for r in j.metadata.owner_references or []}
        }
        pods = client.CoreV1Api().list_namespaced_pod(namespace, label_selector=f"job-name={job_name}").items
        mine = [p for p in pods if {r.uid for r in p.metadata.owner_references or []} & jobs]
        return mine[0] if mine else None

    return wait_for(probe, 60, f"pod of {task_uid}'s job {job_name}")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def play_kubelet(pod: client.V1Pod, phase: str, exit_code: int | None = None, message: str = "") -> None:
    """Write the pod status a kubelet would (no kubelet runs in this tier)."""
    state: dict[str, Any]
    if phase == "Running":
        state = {"running": {"startedAt": _now()}}
    else:
        state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "message": message,
                "startedAt": _now(),
                "finishedAt": _now(),
            }
        }
    container = {
        "name": "runtime",
        "image": pod.spec.containers[0].image,
        "imageID": "",
        "ready": phase == "Running",
        "restartCount": 0,
        "state": state,
    }
    ready = {"type": "Ready", "status": "True" if phase == "Running" else "False", "lastTransitionTime": _now()}
    body = {"status": {"phase": phase, "startTime": _now(), "containerStatuses": [container], "conditions": [ready]}}
    client.CoreV1Api().patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, body)


def events_until(namespace: str, field_selector: str, enough: Callable[[set[tuple[str, str, str]]], bool]) -> set[Any]:
    """(reason, type, message) of the Events about an object, once `enough` of them are there: the operator sends its
    Events in the background, after the status write they tell of."""

    def found() -> set[tuple[str, str, str]] | None:
        events = client.CoreV1Api().list_namespaced_event(namespace, field_selector=field_selector).items
        said = {(e.reason, e.type, e.message) for e in events}
        return said if enough(said) else None

    return wait_for(found, what=f"Events about {field_selector}")
