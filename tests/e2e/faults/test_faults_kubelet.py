"""Issue 31.5: the node's kubelet SIGKILLed and started again while a cold task and a session's execution run. The
containers run on under containerd; the new kubelet takes them over: the task succeeds once, the execution's caller
gets its outcome once, the session goes on in the same sandbox, and no container was started again."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from kubernetes import client

from tests.e2e.faults.calls import execute_as, ready_session, resolve
from tests.e2e.faults.conftest import POOL, Workspace
from tests.e2e.faults.disruptions import restart_kubelet
from tests.e2e.faults.figures import record_figures
from tests.e2e.faults.release_state import pods, sessions_url, wait_release_ready
from tests.e2e.node import Node
from tests.e2e.node_config import NODE_NAME
from tests.e2e.release import API_VERSION, GROUP, PLURAL, RELEASE_NAMESPACE, wait_task
from tests.e2e.sessions import wait_session
from tests.support.session_api import execute

pytestmark = pytest.mark.e2e

TASK_CODE = """
call_tool("rec/record", {"label": "kubelet-task-started"})
import time
time.sleep(15)
print("label:", call_tool("rec/record", {"label": "kubelet-task-done"})["result"])
"""
SESSION_CODE = "call_tool('rec/record', {'label': 'kubelet-session'})\nimport time\ntime.sleep(10)\nprint('done')"


def _restarts(namespace: str) -> dict[str, int]:
    listed: Any = client.CoreV1Api().list_namespaced_pod(namespace)
    return {p.metadata.name: sum(c.restart_count for c in p.status.container_statuses or []) for p in listed.items}


def _wait_kubelet_back(since: datetime, timeout: float = 120) -> None:
    """Until the new kubelet renewed the node's lease (every 10 s)."""
    deadline = time.monotonic() + timeout
    while True:
        lease: Any = client.CoordinationV1Api().read_namespaced_lease(NODE_NAME, "kube-node-lease")
        if lease.spec.renew_time > since:
            return
        assert time.monotonic() < deadline, f"the node's lease was last renewed at {lease.spec.renew_time}"
        time.sleep(0.2)


def test_a_kubelet_restart_under_a_task_and_a_session(e2e_node: Node, workspace: Workspace) -> None:
    ns, token, rec, custom = workspace.namespace, workspace.token, workspace.recorder, client.CustomObjectsApi()
    wait_release_ready()
    task: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": "through-kubelet"},
        "spec": {"timeoutSeconds": 300, "mcpServers": ["rec"], "code": TASK_CODE},
    }  # fmt: skip
    with ready_session(ns, "kubelet", POOL) as sandbox, ThreadPoolExecutor(1) as caller:
        url = sessions_url(pods("gateway")[0])
        custom.create_namespaced_custom_object(GROUP, API_VERSION, ns, PLURAL, task)
        rec.wait_for("kubelet-task-started", timeout=180)
        execution = uuid.uuid4().hex
        running = caller.submit(execute_as, url, ns, "kubelet", token, SESSION_CODE, execution)
        rec.wait_for("kubelet-session")
        before = {**_restarts(ns), **_restarts(RELEASE_NAMESPACE)}

        restarted_at, since = time.monotonic(), datetime.now(UTC)
        restart_kubelet(e2e_node)
        _wait_kubelet_back(since)
        recovered = time.monotonic() - restarted_at

        resolved = resolve(running.result(timeout=300), ns, "kubelet", token, execution)
        status = wait_task(custom, "through-kubelet", ns, timeout=180)["status"]
        with httpx.Client() as http:
            after = execute(http, url, ns, "kubelet", token, "print('same sandbox')")
        assert wait_session(ns, "kubelet", "Ready")["podName"] == sandbox.metadata.name
        job_pods: Any = client.CoreV1Api().list_namespaced_pod(ns, label_selector=f"job-name={status['jobName']}")
        now = {**_restarts(ns), **_restarts(RELEASE_NAMESPACE)}
    custom.delete_namespaced_custom_object(GROUP, API_VERSION, ns, PLURAL, "through-kubelet")

    counts = {label: rec.count(label) for label in ("kubelet-task-started", "kubelet-task-done", "kubelet-session")}
    restarted = {name: now[name] - n for name, n in before.items() if name in now and now[name] != n}
    record_figures(
        "kubelet SIGKILLed and started again",
        lost=int(status["phase"] != "Succeeded") + int(resolved.state != "finished"),
        doubled=sum(n > 1 for n in counts.values()), mixed=0, containers_restarted=len(restarted),
        recover_seconds=round(recovered, 1),
    )  # fmt: skip
    assert status["phase"] == "Succeeded" and "label: kubelet-task-done" in status["result"], status
    assert resolved.state == "finished" and resolved.outcome is not None, resolved
    assert resolved.outcome["stdout"] == "done\n", resolved
    assert counts == {"kubelet-task-started": 1, "kubelet-task-done": 1, "kubelet-session": 1}, counts
    assert after.status_code == 200 and after.json()["stdout"] == "same sandbox\n", after.text
    assert len(job_pods.items) == 1, [p.metadata.name for p in job_pods.items]
    assert not restarted, f"containers started again after the kubelet's restart: {restarted}"
