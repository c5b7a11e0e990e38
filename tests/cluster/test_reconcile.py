"""An AgentTask becomes exactly the hardened objects it should, and its Job's fate flows back into status."""

from __future__ import annotations

import json
from typing import Any

import kopf.testing
from kubernetes import client

from tests.cluster.conftest import DNS_PEERS, IMAGE_PULL_SECRETS
from tests.cluster.kube import (
    condition,
    create_task,
    ensure_runtime_class,
    events_until,
    job_pod,
    play_kubelet,
    task_status,
    wait_for,
    wait_phase,
)
from tests.support.malformed import agenttask

OPERATOR_DEFAULTS = {
    "runtime_image": "mcpexec/runtime:0.1.0",
    "gateway_url": "http://mcpexec-gateway.mcpexec-system.svc:8000",
    "gateway_namespace": "mcpexec-system",
    "audience": "mcpexec-gateway",
}


def _owned_by(obj: Any, uid: str) -> bool:
    refs = obj.metadata.owner_references or []
    return any(r.uid == uid and r.kind == "AgentTask" and r.controller and r.block_owner_deletion for r in refs)


def test_task_creates_hardened_objects(operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]) -> None:
    body = agenttask(
        "report",
        code="print(1 + 1)",
        mcpServers=[],
        timeoutSeconds=120,
        resources={"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
        skills={"owner": "data-team", "readOnly": True, "size": "2Gi"},
    )
    uid = create_task(namespace, body)["metadata"]["uid"]
    status = wait_for(lambda: task_status(namespace, "report").get("jobName") and task_status(namespace, "report"))
    assert status["phase"] == "Pending"
    assert status["mode"] == "code"
    assert status["observedGeneration"] == 1
    assert condition(status, "Accepted")["status"] == "True"
    name = "mcpexec-report"
    core, batch, net = api["core"], api["batch"], api["net"]

    sa = core.read_namespaced_service_account(name, namespace)
    assert sa.automount_service_account_token is False
    assert _owned_by(sa, uid)

    cm = core.read_namespaced_config_map(name, namespace)
    assert _owned_by(cm, uid)
    assert json.loads(cm.data["task.json"]) == {
        "namespace": namespace,
        "name": "report",
        "uid": uid,
        "mode": "code",
        "code": "print(1 + 1)",
        "maxTurns": 10,
        "timeoutSeconds": 120,
    }

    np = net.read_namespaced_network_policy(name, namespace)
    assert _owned_by(np, uid)
    assert np.spec.pod_selector.match_labels["mcpexec.dev/task"] == "report"
    assert sorted(np.spec.policy_types) == ["Egress", "Ingress"]
    assert not np.spec.ingress
    gateway_rule, dns_rule = np.spec.egress
    assert gateway_rule.to[0].namespace_selector.match_labels == {
        "kubernetes.io/metadata.name": OPERATOR_DEFAULTS["gateway_namespace"]
    }
    assert gateway_rule.to[0].pod_selector.match_labels == {"app.kubernetes.io/name": "mcpexec-gateway"}
    assert [(p.protocol, p.port) for p in gateway_rule.ports] == [("TCP", 8000), ("TCP", 3128)]
    assert [client.ApiClient().sanitize_for_serialization(peer) for peer in dns_rule.to] == DNS_PEERS
    assert sorted((p.protocol, p.port) for p in dns_rule.ports) == [("TCP", 53), ("UDP", 53)]

    pvc = core.read_namespaced_persistent_volume_claim("skills-data-team", namespace)
    assert not pvc.metadata.owner_references, "skills must outlive the task"
    assert pvc.spec.resources.requests == {"storage": "2Gi"}

    job = batch.read_namespaced_job(name, namespace)
    assert _owned_by(job, uid)
    assert job.spec.backoff_limit == 0
    assert job.spec.active_deadline_seconds == 120
    pod = job.spec.template.spec
    assert pod.runtime_class_name == "gvisor"
    assert [secret.name for secret in pod.image_pull_secrets] == IMAGE_PULL_SECRETS
    assert pod.service_account_name == name
    assert pod.automount_service_account_token is False
    assert pod.enable_service_links is False
    assert pod.restart_policy == "Never"
    assert pod.security_context.run_as_non_root is True
    assert pod.security_context.run_as_user == 65534
    assert pod.security_context.seccomp_profile.type == "RuntimeDefault"
    (container,) = pod.containers
    sc = container.security_context
    assert sc.run_as_non_root is True
    assert sc.read_only_root_filesystem is True
    assert sc.allow_privilege_escalation is False
    assert sc.privileged is False
    assert sc.capabilities.drop == ["ALL"]
    assert not sc.capabilities.add
    assert sc.seccomp_profile.type == "RuntimeDefault"
    assert container.image == OPERATOR_DEFAULTS["runtime_image"]
    assert container.resources.requests == {"cpu": "250m", "memory": "128Mi"}
    assert container.resources.limits == {"cpu": "2", "memory": "1Gi"}
    assert container.termination_message_path == "/dev/termination-log"
    env = {e.name: e.value for e in container.env}
    assert env["MCPEXEC_GATEWAY_URL"] == OPERATOR_DEFAULTS["gateway_url"]
    assert env["MCPEXEC_RESULT_FILE"] == "/dev/termination-log"
    mounts = {m.mount_path: m for m in container.volume_mounts}
    assert set(mounts) == {"/workspace", "/tmp", "/skills", "/etc/mcpexec", "/var/run/secrets/mcpexec"}
    assert mounts["/skills"].read_only is True
    assert mounts["/etc/mcpexec"].read_only is True
    volumes = {v.name: v for v in pod.volumes}
    assert volumes["workspace"].empty_dir is not None
    assert volumes["skills"].persistent_volume_claim.claim_name == "skills-data-team"
    assert volumes["skills"].persistent_volume_claim.read_only is True
    (source,) = volumes["gateway-token"].projected.sources
    assert source.service_account_token.audience == OPERATOR_DEFAULTS["audience"]
    assert source.service_account_token.path == "token"

    # The real Job controller made exactly one pod from it.
    assert job_pod(namespace, name).spec.runtime_class_name == "gvisor"


def _run(namespace: str, name: str, **spec: Any) -> Any:
    create_task(namespace, agenttask(name, **spec))
    wait_for(lambda: task_status(namespace, name).get("jobName"), what=f"{name} accepted")
    return job_pod(namespace, f"mcpexec-{name}")


def test_status_follows_job_to_success(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    pod = _run(namespace, "ok")
    play_kubelet(pod, "Running")
    running = wait_phase(namespace, "ok", "Running")
    assert running["podName"] == pod.metadata.name
    message = {
        "phase": "Succeeded",
        "result": "2 customers exported",
        "usage": {"llmTurns": 0, "tokensIn": 0, "tokensOut": 0, "toolCalls": 3},
    }
    play_kubelet(pod, "Succeeded", exit_code=0, message=json.dumps(message))
    done = wait_phase(namespace, "ok", "Succeeded")
    assert done["result"] == "2 customers exported"
    assert done["usage"]["toolCalls"] == 3
    assert done["startTime"] and done["completionTime"] and done["duration"].endswith("s")
    told = {("Pending", "Normal"), ("Running", "Normal"), ("Succeeded", "Normal")}
    events_until(namespace, "involvedObject.name=ok", lambda said: {(reason, kind) for reason, kind, _ in said} >= told)
    assert condition(done, "Finished") | {"lastTransitionTime": None} == {
        "type": "Finished",
        "status": "True",
        "reason": "Succeeded",
        "message": "the task's code finished successfully",
        "lastTransitionTime": None,
        "observedGeneration": 1,
    }


def test_status_follows_job_to_failure(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    pod = _run(namespace, "boom")
    message = {"phase": "Failed", "result": "", "error": "ZeroDivisionError: division by zero"}
    play_kubelet(pod, "Failed", exit_code=1, message=json.dumps(message))
    done = wait_phase(namespace, "boom", "Failed")
    finished = condition(done, "Finished")
    assert finished["reason"] == "Failed"
    assert finished["message"] == "ZeroDivisionError: division by zero"
    told = ("Failed", "Warning", "ZeroDivisionError: division by zero")
    events_until(namespace, "involvedObject.name=boom", lambda said: told in said)
    assert "error" not in done


def test_status_follows_job_to_deadline(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    pod = _run(namespace, "slow", timeoutSeconds=2)
    play_kubelet(pod, "Running")
    done = wait_phase(namespace, "slow", "TimedOut", timeout=60)
    assert condition(done, "Finished")["reason"] == "DeadlineExceeded"


def test_missing_runtime_class_fails_closed(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    """No sandbox, no Job: the task waits with a clear condition, and runs once the RuntimeClass exists."""
    create_task(namespace, agenttask("wants-kata", runtimeClassName="kata-test"))
    status = wait_for(
        lambda: (s := task_status(namespace, "wants-kata")).get("conditions") and s, what="Accepted condition"
    )
    accepted = condition(status, "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "RuntimeClassNotFound")
    assert "kata-test" in accepted["message"] and "sandbox" in accepted["message"]
    assert status["phase"] == "Pending"
    assert client.BatchV1Api().list_namespaced_job(namespace).items == []
    ensure_runtime_class("kata-test")
    wait_for(lambda: task_status(namespace, "wants-kata").get("jobName"), what="job after RuntimeClass appeared")
    assert condition(task_status(namespace, "wants-kata"), "Accepted")["status"] == "True"


def test_missing_runtime_class_past_deadline_fails(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    create_task(namespace, agenttask("never", runtimeClassName="no-such-sandbox", timeoutSeconds=1))
    done = wait_phase(namespace, "never", "Failed", timeout=60)
    assert condition(done, "Finished")["reason"] == "RuntimeClassNotFound"
    assert client.BatchV1Api().list_namespaced_job(namespace).items == []


def test_unknown_mcp_server_surfaces_as_condition(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    create_task(namespace, agenttask("lost", mcpServers=["crm"], timeoutSeconds=1))
    done = wait_phase(namespace, "lost", "Failed", timeout=60)
    assert condition(done, "Accepted")["reason"] == "MCPServerNotFound"
    assert "crm" in condition(done, "Accepted")["message"]


def test_invalid_spec_beyond_the_schema_surfaces_as_condition(
    operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    """A custom PII pattern that only a backtracking engine can run (a backreference) passes the CRD schema but not
    the operator: patterns are RE2, matched in linear time."""
    create_task(namespace, agenttask("badre", pii={"customPatterns": [{"name": "TICKET", "regex": r"(a+)+\1b"}]}))
    done = wait_phase(namespace, "badre", "Failed")
    accepted = condition(done, "Accepted")
    assert accepted["reason"] == "InvalidSpec"
    assert "TICKET" in accepted["message"] and "refused" in accepted["message"] and "RE2" in accepted["message"]
