"""Pods for the e2e tests: busybox pods (gVisor unless told otherwise), waiting, logs; a namespace to run them in."""

from __future__ import annotations

import time
import uuid
from typing import Any

from kubernetes import client

from tests.e2e.node_config import BUSYBOX_IMAGE


def pod(name: str, script: str, runtime_class: str | None = "gvisor", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "runtimeClassName": runtime_class,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "args": [script]},
            ],
            **spec,
        },
    }


def wait_phase(core: client.CoreV1Api, ns: str, name: str, phases: set[str], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = core.read_namespaced_pod(name, ns)
        if found.status.phase in phases:
            return found
        if time.monotonic() > deadline:
            events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
            raise AssertionError(
                f"pod {ns}/{name} is {found.status.phase}, not {phases}, after {timeout}s; "
                f"status: {found.status}; events: {[(e.reason, e.message) for e in events]}"
            )
        time.sleep(0.2)


def run_to_completion(core: client.CoreV1Api, ns: str, body: dict[str, Any], timeout: float = 120) -> str:
    """Create the pod, wait until it Succeeded, return its log (fails with the log if it Failed)."""
    name = body["metadata"]["name"]
    started = time.monotonic()
    core.create_namespaced_pod(ns, body)
    done = wait_phase(core, ns, name, {"Succeeded", "Failed"}, timeout)
    log: str = core.read_namespaced_pod_log(name, ns)
    print(f"pod {name} ({body['spec']['runtimeClassName'] or 'runc'}) done in {time.monotonic() - started:.1f}s")
    assert done.status.phase == "Succeeded", f"pod {name} failed: {done.status}; log:\n{log}"
    return log


def create_namespace(core: client.CoreV1Api, name: str | None = None) -> str:
    """A new namespace (`name`, or a fresh one), once pods can run in it: they need its default ServiceAccount (made
    by kube-controller-manager)."""
    name = name or f"e2e-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while not core.list_namespaced_service_account(name).items:
        assert time.monotonic() < deadline, f"no default ServiceAccount in {name}"
        time.sleep(0.2)
    return name
