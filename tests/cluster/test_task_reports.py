"""The fast result path against a real API server: a sandbox reports its result to the gateway
(`POST /v1/task/result`), the gateway records it as its own task's `status.report` (once), and the operator finishes
the task from it before its pod has exited; the Job's later state changes nothing, and a task with no report still
finishes from its termination message.

No kubelet runs in this tier: pods are never scheduled, and a test writes a pod's status itself where the kubelet
would (tests/cluster/kube.py: play_kubelet); the real runtime runs as a local process holding the task's token.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import kopf.testing
import pytest
from kubernetes import client, config

from controller.naming import child_name, run_record_name
from gateway.cluster.directory import KubeDirectory
from mcpexec.api.agenttask import AgentTaskSpec, runtime_task_config
from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, VERSION
from tests.cluster.kube import condition, create_task, job_pod, play_kubelet, task_status, wait_for, wait_phase
from tests.cluster.test_gateway_pools import (
    AUDIENCE,
    POOL_ACCOUNT,
    ClusterGateway,
    _error,
    _pod_token,
    _pool_account,
    _pool_pod,
    _task_token,
    _write_claim,
    sandbox_runtime,
)
from tests.support.components import free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

RESULT_PATH = "/v1/task/result"
SUCCEEDED = {"phase": "Succeeded", "result": "first", "usage": {"llmTurns": 0, "tokensIn": 0, "tokensOut": 0,
             "toolCalls": 2}}  # fmt: skip


def _report(namespace: str, name: str) -> dict[str, Any] | None:
    report: dict[str, Any] | None = task_status(namespace, name).get("report")
    return report


def _without_time(report: dict[str, Any] | None) -> dict[str, Any]:
    assert report is not None and report["reportedAt"]
    return {key: value for key, value in report.items() if key != "reportedAt"}


def test_a_sandbox_reports_its_own_tasks_result_once(cluster: ControlPlane, namespace: str) -> None:
    """Authenticated as every sandbox route is; the report lands on the caller's task only, bounded and validated as
    the termination message is; the first one stands. The gateway never writes the phase."""
    token = _task_token(namespace)  # the cold task "solo"'s own ServiceAccount token
    with ClusterGateway(cluster) as gateway, gateway.client(token) as sandbox:
        assert _error(httpx.post(f"{gateway.url}{RESULT_PATH}", json=SUCCEEDED)) == (401, "unauthenticated")
        with gateway.client("forged") as forged:
            assert _error(forged.post(RESULT_PATH, json=SUCCEEDED)) == (401, "unauthenticated")
        # What a termination message could not say is refused, and nothing is written.
        for body in (
            {**SUCCEEDED, "phase": "TimedOut"},  # the runtime reports Succeeded or Failed only
            {**SUCCEEDED, "extra": 1},
            {**SUCCEEDED, "usage": {"toolCalls": -1}},
            {**SUCCEEDED, "usage": {"toolCalls": 2**63}},  # past what the API server keeps
            {"result": "no phase"},
        ):
            assert _error(sandbox.post(RESULT_PATH, json=body)) == (422, "invalid_request"), body
        refused = sandbox.post(RESULT_PATH, content=b"not json", headers={"Content-Type": "application/json"})
        assert refused.status_code in (400, 422), refused.text
        # Past the termination message's 4096 bytes: 413, as the kubelet would not carry it either.
        assert _error(sandbox.post(RESULT_PATH, json={**SUCCEEDED, "result": "x" * 4100})) == (413, "request_too_large")
        assert _error(sandbox.post(RESULT_PATH, json={**SUCCEEDED, "result": "é" * 2100})) == (413, "request_too_large")
        assert _report(namespace, "solo") is None

        answer = sandbox.post(RESULT_PATH, json=SUCCEEDED)
        assert answer.status_code == 204, answer.text
        assert _without_time(_report(namespace, "solo")) == SUCCEEDED
        assert task_status(namespace, "solo")["phase"] == "Pending"  # the operator's to write, never the gateway's
        # A second report is taken and changes nothing: the first stands.
        again = sandbox.post(RESULT_PATH, json={"phase": "Failed", "result": "second", "error": "no"})
        assert again.status_code == 204, again.text
        assert _without_time(_report(namespace, "solo")) == SUCCEEDED


def test_a_pool_sandbox_reports_for_the_task_that_claimed_it_only(cluster: ControlPlane, namespace: str) -> None:
    """A claimed sandbox's report is its claimant's; an unclaimed one has no task; concurrent reports leave exactly
    one (each write is guarded by the task's resourceVersion); a finished task takes none."""
    _pool_account(namespace)
    pod_a, pod_b = _pool_pod(namespace, f"{POOL_ACCOUNT}-aaaaa"), _pool_pod(namespace, f"{POOL_ACCOUNT}-bbbbb")
    spec = {"poolRef": {"name": "fast"}, "code": "print(1)"}
    create_task(namespace, agenttask("claimer", **spec))
    create_task(namespace, agenttask("bystander", **spec))
    _write_claim(namespace, "claimer", pod_a)
    with (
        ClusterGateway(cluster) as gateway,
        gateway.client(_pod_token(namespace, pod_a)) as sandbox_a,
        gateway.client(_pod_token(namespace, pod_b)) as sandbox_b,
    ):
        wait_for(lambda: gateway.claim(namespace, pod_a["metadata"]["uid"]), 30, "the claim indexed")
        assert _error(sandbox_b.post(RESULT_PATH, json=SUCCEEDED)) == (403, "sandbox_not_claimed")
        # Several at once, each its own attempt at the write: one lands, every one is answered 204.
        bodies = [{**SUCCEEDED, "result": f"report {i}"} for i in range(6)]
        with ThreadPoolExecutor(len(bodies)) as pool:
            answers = list(pool.map(lambda body: sandbox_a.post(RESULT_PATH, json=body), bodies))
        assert [a.status_code for a in answers] == [204] * len(bodies), [a.text for a in answers]
        landed = _report(namespace, "claimer")
        assert landed is not None and landed["result"] in {b["result"] for b in bodies}
        assert _report(namespace, "bystander") is None
        # Finished: its claim is dropped, its sandbox reaches nothing (the report too).
        _write_claim(namespace, "claimer", pod_a, phase="Succeeded")
        wait_for(lambda: gateway.claim(namespace, pod_a["metadata"]["uid"]) is None, 30, "the finished claim dropped")
        assert _error(sandbox_a.post(RESULT_PATH, json={**SUCCEEDED, "result": "late"})) == (
            403,
            "sandbox_not_claimed",
        )
        assert _report(namespace, "claimer") == landed


@contextmanager
def _silent_api_server() -> Iterator[int]:
    """A port that takes connections and never answers: an API server that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def test_the_gateway_answers_when_the_api_server_does_not_take_the_report(
    cluster: ControlPlane, namespace: str
) -> None:
    """A hung API server: the report is answered 503 within the gateway's bound (the runtime waits 10 s before it
    writes its termination message anyway), not held; the gateway serves on."""
    token = _task_token(namespace)
    with _silent_api_server() as port:
        hung = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        hung.configuration.refresh_api_key_hook = None  # it would set the kubeconfig's server again
        hung.configuration.host = f"https://127.0.0.1:{port}"
        with (
            ClusterGateway(cluster, reports_directory=KubeDirectory(hung)) as gateway,
            gateway.client(token) as sandbox,
        ):
            answer = sandbox.post(RESULT_PATH, json=SUCCEEDED, timeout=10)
            assert _error(answer) == (503, "task_status_unavailable"), answer.text
            assert sandbox.get("/v1/servers").status_code == 200
    assert _report(namespace, "solo") is None


def _gateway_writes_report(namespace: str, name: str, report: dict[str, Any]) -> None:
    """`status.report` as the gateway writes it (gateway/cluster/task_reports.py)."""
    body = {"status": {"report": {**report, "reportedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}}
    client.CustomObjectsApi().patch_namespaced_custom_object_status(GROUP, VERSION, namespace, AGENTTASK_PLURAL, name,
                                                                    body)  # fmt: skip


def _events(namespace: str, uid: str) -> list[str]:
    listed = client.CoreV1Api().list_namespaced_event(namespace, field_selector=f"involvedObject.uid={uid}").items
    return [event.reason for event in listed]


def _run_record(namespace: str, name: str) -> dict[str, str]:
    data: dict[str, str] = client.CoreV1Api().read_namespaced_config_map(run_record_name(name), namespace).data or {}
    return data


def _job_finished(namespace: str, name: str) -> bool:
    job = client.BatchV1Api().read_namespaced_job(child_name(name), namespace)
    return any(c.status == "True" and c.type in ("Complete", "Failed") for c in job.status.conditions or [])


def test_a_reported_task_finishes_before_its_pod_exits_as_a_job_would_finish_it(
    operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    """The report folds into the status (phase, result, usage, completionTime, Finished) with the side effects of a
    phase change (its Event, the run's outcome in its record); the running pod is given a deadline a grace from now;
    the pod's exit and the Job's completion afterwards change nothing."""
    uid = create_task(namespace, agenttask("fast"))["metadata"]["uid"]
    wait_for(lambda: task_status(namespace, "fast").get("jobName"), what="job created")
    pod = job_pod(namespace, child_name("fast"))
    play_kubelet(pod, "Running")
    wait_phase(namespace, "fast", "Running")
    _gateway_writes_report(namespace, "fast", SUCCEEDED)
    status = wait_phase(namespace, "fast", "Succeeded")
    assert (status["result"], status["usage"]["toolCalls"]) == ("first", 2)
    assert status["completionTime"] == status["report"]["reportedAt"]
    finished = condition(status, "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
    assert condition(status, "Succeeded")["status"] == "True"
    wait_for(lambda: "Succeeded" in _events(namespace, uid), 30, "the Succeeded Event")
    wait_for(lambda: _run_record(namespace, "fast").get("phase") == "Succeeded", 30, "the run's outcome recorded")

    def deadline() -> int | None:
        found = client.CoreV1Api().read_namespaced_pod(pod.metadata.name, namespace).spec.active_deadline_seconds
        return int(found) if found else None

    bounded = wait_for(deadline, 30, "the reported pod's deadline")
    assert bounded <= 60 + 30  # started moments ago, ended a 30 s grace after the report unless it exits first

    # The runtime then writes its termination message and exits; the Job completes: the status stands.
    play_kubelet(pod, "Succeeded", exit_code=0, message=json.dumps({**SUCCEEDED, "result": "from the pod"}))
    wait_for(lambda: _job_finished(namespace, "fast"), 60, "the Job complete")
    time.sleep(2)  # the operator has seen the Job's and pod's events by now
    assert task_status(namespace, "fast") == status
    assert _events(namespace, uid).count("Succeeded") == 1


def test_a_failure_report_fails_the_task_and_the_jobs_own_failure_changes_nothing(
    operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    create_task(namespace, agenttask("broken"))
    wait_for(lambda: task_status(namespace, "broken").get("jobName"), what="job created")
    pod = job_pod(namespace, child_name("broken"))
    play_kubelet(pod, "Running")
    _gateway_writes_report(namespace, "broken", {"phase": "Failed", "result": "", "error": "ValueError: bad input"})
    status = wait_phase(namespace, "broken", "Failed")
    assert condition(status, "Finished")["message"] == "ValueError: bad input"
    wait_for(lambda: _run_record(namespace, "broken").get("phase") == "Failed", 30, "the run's outcome recorded")
    play_kubelet(pod, "Failed", exit_code=137, message="")  # then killed, say, with no termination message
    wait_for(lambda: _job_finished(namespace, "broken"), 60, "the Job failed")
    time.sleep(2)
    assert condition(task_status(namespace, "broken"), "Finished")["message"] == "ValueError: bad input"


def test_a_task_without_a_report_finishes_from_its_termination_message(
    operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    """The fallback (the gateway gone, the report refused): the Job path, unchanged."""
    create_task(namespace, agenttask("fallback"))
    wait_for(lambda: task_status(namespace, "fallback").get("jobName"), what="job created")
    message = json.dumps({**SUCCEEDED, "result": "from the pod"})
    play_kubelet(job_pod(namespace, child_name("fallback")), "Succeeded", exit_code=0, message=message)
    status = wait_phase(namespace, "fallback", "Succeeded")
    assert (status["result"], status["usage"]["toolCalls"], "report" in status) == ("from the pod", 2, False)


@pytest.mark.timeout(180)
def test_the_real_runtime_finishes_its_task_through_the_gateway_with_its_pod_never_run(
    operator: kopf.testing.KopfRunner, cluster: ControlPlane, namespace: str
) -> None:
    """End to end but for the kubelet: `python3 -m runtime` with the task's config and its ServiceAccount's token
    runs the code, reports to the cluster gateway and writes its termination message; the operator finishes the
    task from the report while the Job's pod has not even started."""
    spec = {"code": "print(6 * 7)"}
    task = create_task(namespace, agenttask("direct", **spec))
    wait_for(lambda: task_status(namespace, "direct").get("jobName"), what="job created")
    request = {"spec": {"audiences": [AUDIENCE], "expirationSeconds": 600}}
    token = client.CoreV1Api().create_namespaced_service_account_token(child_name("direct"), namespace, request)
    config_ = runtime_task_config(namespace, "direct", task["metadata"]["uid"], AgentTaskSpec.model_validate(spec))
    port = free_port()
    with (
        ClusterGateway(cluster, port),
        sandbox_runtime(token.status.token, port, task=config_, report=True) as (runtime, workspace),
    ):
        _stdout, stderr = runtime.communicate(timeout=60)
        assert runtime.returncode == 0, stderr
        written = json.loads((workspace / "result.json").read_text())  # the termination message, as ever
    assert stderr == ""  # the report was taken
    status = wait_phase(namespace, "direct", "Succeeded")
    assert status["result"] == "42\n" == written["result"]
    assert _without_time(status["report"]) == written
    assert job_pod(namespace, child_name("direct")).status.phase == "Pending"
