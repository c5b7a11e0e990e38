"""The project's runtime image (images/build-rootfs.sh) runs under gVisor on the node with the security
context the operator gives sandbox Jobs, and its termination message (where the result goes) comes back
in the pod's status."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.node import Node
from tests.e2e.node_artifacts import PROJECT_VERSION, project_image

pytestmark = pytest.mark.e2e

IMAGE = f"docker.io/mcpexec/runtime:{PROJECT_VERSION}"
SCRIPT = """
import json, os, platform, runtime
open("/dev/termination-log", "w").write(json.dumps(
    {"kernel": platform.release(), "uid": os.getuid(), "runtime": runtime.__name__}))
"""


def test_runtime_image_runs_under_gvisor_with_the_sandbox_security_context(
    e2e_node: Node, core: client.CoreV1Api
) -> None:
    e2e_node.import_image(project_image("runtime"))
    name = f"runtime-{uuid.uuid4().hex[:6]}"
    body: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {
            "runtimeClassName": "gvisor",
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534, "fsGroup": 65534},
            "containers": [
                {
                    "name": "runtime",
                    "image": IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["python3", "-c", SCRIPT],
                    "terminationMessagePolicy": "File",
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "privileged": False,
                        "capabilities": {"drop": ["ALL"]},
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "resources": {"limits": {"cpu": "1", "memory": "512Mi"}},
                }
            ],
        },
    }
    started = time.monotonic()
    core.create_namespaced_pod("default", body)
    deadline = time.monotonic() + 120
    while (pod := core.read_namespaced_pod(name, "default")).status.phase not in ("Succeeded", "Failed"):
        assert time.monotonic() < deadline, pod.status
        time.sleep(0.2)
    print(f"runtime pod done in {time.monotonic() - started:.1f}s")
    log = core.read_namespaced_pod_log(name, "default")
    assert pod.status.phase == "Succeeded", f"{pod.status}\n{log}"
    message = pod.status.container_statuses[0].state.terminated.message
    assert '"uid": 65534' in message and '"runtime": "runtime"' in message, message
    assert "gvisor" in message or "4.4.0" in message, message
    core.delete_namespaced_pod(name, "default")
