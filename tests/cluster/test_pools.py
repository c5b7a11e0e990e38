"""SandboxPools against a real API server and the real operator: warm pods kept, claimed once, refilled, rolled,
scaled, deleted; a task that asks for more than its pool allows is refused. No kubelet runs in this tier: a test
writes the pod status a kubelet would (play_kubelet), and what runs in a pod is the e2e tier's."""

from __future__ import annotations

import json
from typing import Any

import kopf.testing
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import GROUP, POOL_LABEL, SANDBOX_STATE_LABEL, SANDBOXPOOL_PLURAL, TASK_LABEL, VERSION
from tests.cluster.kube import condition, create_task, events_until, play_kubelet, task_status, wait_for, wait_phase
from tests.support.malformed import agenttask

TEMPLATE = {
    "mcpServers": ["crm", "files"],
    "tools": {"allow": ["crm/*", "files/read_*"], "deny": ["crm/delete_*"]},
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
}


def _pool(name: str, replicas: int, when_empty: str = "Cold", **template: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "SandboxPool",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "whenEmpty": when_empty, "template": {**TEMPLATE, **template}},
    }


def _custom() -> client.CustomObjectsApi:
    return client.CustomObjectsApi()


def _create_pool(namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = _custom().create_namespaced_custom_object(
        GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, body, field_validation="Strict"
    )
    return created


def _read_pool(namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = _custom().get_namespaced_custom_object(GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, name)
    return found


def _servers(namespace: str, *names: str) -> None:
    for name in names:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "MCPServer",
            "metadata": {"name": name},
            "spec": {"transport": "streamableHttp", "url": f"http://{name}.example:8080/mcp"},
        }
        _custom().create_namespaced_custom_object(GROUP, VERSION, namespace, "mcpservers", body)


def _pods(namespace: str, pool: str, state: str | None = None) -> list[client.V1Pod]:
    selector = f"{POOL_LABEL}={pool}" + (f",{SANDBOX_STATE_LABEL}={state}" if state else "")
    pods = client.CoreV1Api().list_namespaced_pod(namespace, label_selector=selector).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def _idle(namespace: str, pool: str, count: int) -> list[client.V1Pod]:
    return wait_for(
        lambda: (pods := _pods(namespace, pool, "idle")) and len(pods) == count and pods,
        what=f"{count} idle pods in pool {pool}",
    )


def _ready(pods: list[client.V1Pod]) -> None:
    for pod in pods:
        play_kubelet(pod, "Running")


def _warm_pool(namespace: str, name: str, replicas: int, **spec: Any) -> list[client.V1Pod]:
    _create_pool(namespace, _pool(name, replicas, **spec))
    pods = _idle(namespace, name, replicas)
    _ready(pods)
    wait_for(lambda: _read_pool(namespace, name).get("status", {}).get("readyReplicas") == replicas, what="ready")
    return pods


def test_a_pool_keeps_hardened_idle_sandboxes_and_reports_them(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    created = _create_pool(namespace, _pool("fast", 2))
    pods = _idle(namespace, "fast", 2)
    for pod in pods:
        spec = pod.spec
        assert spec.runtime_class_name == "gvisor" and spec.restart_policy == "Never"
        assert spec.automount_service_account_token is False and spec.service_account_name == "mcpexec-pool-fast"
        container = spec.containers[0]
        assert container.security_context.read_only_root_filesystem is True
        assert container.security_context.capabilities.drop == ["ALL"]
        assert container.resources.limits == {"cpu": "1", "memory": "512Mi"}
        env = {e.name: e.value for e in container.env}
        assert env["MCPEXEC_AWAIT_ASSIGNMENT"] == "1" and "MCPEXEC_TOKEN_FILE" in env
        # Ready only once its runtime has written the marker (it waits for a task then), not when it started.
        probe = container.startup_probe
        assert probe.var_exec.command[0] == "python3" and env["MCPEXEC_READY_FILE"] in probe.var_exec.command[-1]
        assert not any(v.config_map for v in spec.volumes), "an idle sandbox has no task"
        assert [r.uid for r in pod.metadata.owner_references] == [created["metadata"]["uid"]]
    account = api["core"].read_namespaced_service_account("mcpexec-pool-fast", namespace)
    assert account.automount_service_account_token is False and account.metadata.labels[POOL_LABEL] == "fast"
    policy = api["net"].read_namespaced_network_policy("mcpexec-pool-fast", namespace)
    assert policy.spec.pod_selector.match_labels[POOL_LABEL] == "fast" and not policy.spec.ingress
    assert policy.spec.policy_types == ["Ingress", "Egress"]
    status = _read_pool(namespace, "fast")["status"]
    assert (status["replicas"], status["readyReplicas"], status["claimedReplicas"]) == (2, 0, 0)
    assert condition(status, "Ready")["status"] == "False"

    _ready(pods)
    status = wait_for(lambda: (s := _read_pool(namespace, "fast").get("status", {})).get("readyReplicas") == 2 and s)
    assert condition(status, "Ready")["status"] == "True"
    assert status["observedGeneration"] == 1 and status["selector"] == f"{POOL_LABEL}=fast,{SANDBOX_STATE_LABEL}=idle"


def test_scale_subresource_resizes_the_pool(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    ready_one = _warm_pool(namespace, "scaled", 1)[0]
    _custom().patch_namespaced_custom_object_scale(
        GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, "scaled", {"spec": {"replicas": 3}}
    )
    _idle(namespace, "scaled", 3)
    scale = _custom().get_namespaced_custom_object_scale(GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, "scaled")
    assert scale["spec"]["replicas"] == 3
    assert scale["status"]["selector"] == f"{POOL_LABEL}=scaled,{SANDBOX_STATE_LABEL}=idle"
    _custom().patch_namespaced_custom_object_scale(
        GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, "scaled", {"spec": {"replicas": 1}}
    )
    _idle(namespace, "scaled", 1)
    assert [p.metadata.name for p in _pods(namespace, "scaled", "idle")] == [ready_one.metadata.name], (
        "scaling down removes the sandboxes not ready first"
    )


def test_a_template_change_replaces_idle_sandboxes(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    old = {p.metadata.name for p in _warm_pool(namespace, "rolled", 2)}
    patch = {"spec": {"template": {"resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}}}
    _custom().patch_namespaced_custom_object(GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, "rolled", patch)
    new = wait_for(
        lambda: (
            (pods := _pods(namespace, "rolled", "idle"))
            and len(pods) == 2
            and not old & {p.metadata.name for p in pods}
            and pods
        ),
        what="idle pods of the new template",
    )
    assert all(p.spec.containers[0].resources.limits == {"cpu": "2", "memory": "1Gi"} for p in new)
    assert _read_pool(namespace, "rolled")["status"]["observedGeneration"] == 2


def test_a_dead_idle_sandbox_is_replaced(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    pods = _warm_pool(namespace, "healing", 2)
    api["core"].delete_namespaced_pod(pods[0].metadata.name, namespace, grace_period_seconds=0)
    play_kubelet(pods[1], "Failed", exit_code=1, message="runtime crashed while idle")
    fresh = wait_for(
        lambda: (
            (now := _pods(namespace, "healing", "idle"))
            and len(now) == 2
            and not {p.metadata.name for p in pods} & {p.metadata.name for p in now}
            and now
        ),
        what="two new idle pods",
    )
    assert len(fresh) == 2


def test_a_task_claims_an_idle_sandbox_which_serves_it_once(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    _servers(namespace, "crm", "files")
    pods = _warm_pool(namespace, "warm", 1)
    uid = create_task(namespace, agenttask("quick", poolRef={"name": "warm"}, mcpServers=["crm"], timeoutSeconds=300))[
        "metadata"
    ]["uid"]
    status = wait_for(lambda: (s := task_status(namespace, "quick")).get("claim", {}).get("podName") and s)
    assert status["launchType"] == "Warm" and status["podName"] == pods[0].metadata.name
    claim = status["claim"]
    assert claim["pool"] == "warm" and claim["podUID"] == pods[0].metadata.uid
    assert claim["claimSeconds"] >= 0  # creation to claim (kubectl get -o wide: CLAIM)
    assert claim["policy"]["tools"] == TEMPLATE["tools"] and claim["policy"]["mcpServers"] == ["crm", "files"]
    assert condition(status, "Accepted")["reason"] == "SandboxClaimed"
    assert "jobName" not in status and not api["batch"].list_namespaced_job(namespace).items

    pod = api["core"].read_namespaced_pod(pods[0].metadata.name, namespace)
    assert pod.metadata.labels[SANDBOX_STATE_LABEL] == "claimed" and pod.metadata.labels[TASK_LABEL] == "quick"
    assert [(r.kind, r.uid) for r in pod.metadata.owner_references] == [("AgentTask", uid)]
    assert 300 <= pod.spec.active_deadline_seconds <= 310
    task_policy = api["net"].read_namespaced_network_policy("mcpexec-quick", namespace)
    assert task_policy.spec.pod_selector.match_labels[TASK_LABEL] == "quick"

    refill = _idle(namespace, "warm", 1)
    assert refill[0].metadata.name != pods[0].metadata.name
    wait_for(lambda: _read_pool(namespace, "warm")["status"].get("claimedReplicas") == 1, what="claimed count")

    result = {"phase": "Succeeded", "result": "2", "usage": {"toolCalls": 1}}
    play_kubelet(pod, "Succeeded", exit_code=0, message=json.dumps(result))
    done = wait_phase(namespace, "quick", "Succeeded")
    assert done["result"] == "2" and done["usage"]["toolCalls"] == 1 and done["launchType"] == "Warm"
    assert condition(done, "Finished")["reason"] == "Succeeded"
    events_until(namespace, "", lambda said: {"Claimed", "Refilled"} <= {reason for reason, _, _ in said})
    wait_for(lambda: _read_pool(namespace, "warm")["status"].get("claimedReplicas") == 0, what="claim released")


def test_two_tasks_never_share_a_sandbox(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    _servers(namespace, "crm", "files")
    _warm_pool(namespace, "shared", 3)
    for name in ("one", "two", "three"):
        create_task(namespace, agenttask(name, poolRef={"name": "shared"}, mcpServers=["crm"]))
    claims = [
        wait_for(lambda n=name: task_status(namespace, n).get("claim", {}).get("podUID"), what=f"{name} claimed")
        for name in ("one", "two", "three")
    ]
    assert len(set(claims)) == 3


def test_a_losing_claimed_pod_fails_the_task(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    _servers(namespace, "crm", "files")
    pods = _warm_pool(namespace, "fragile", 1)
    create_task(namespace, agenttask("orphan", poolRef={"name": "fragile"}, mcpServers=["crm"]))
    wait_for(lambda: task_status(namespace, "orphan").get("claim", {}).get("podName"))
    api["core"].delete_namespaced_pod(pods[0].metadata.name, namespace, grace_period_seconds=0)
    status = wait_phase(namespace, "orphan", "Failed")
    assert "sandbox pod was deleted" in condition(status, "Finished")["message"]


def test_no_idle_sandbox_falls_back_to_a_cold_job_in_the_pools_shape(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    _servers(namespace, "crm", "files")
    _create_pool(namespace, _pool("cold", 1))  # its pod is never made ready here
    _idle(namespace, "cold", 1)
    create_task(namespace, agenttask("fallback", poolRef={"name": "cold"}, mcpServers=["files"]))
    status = wait_for(lambda: (s := task_status(namespace, "fallback")).get("jobName") and s)
    assert status["launchType"] == "Cold" and status["claim"]["pool"] == "cold" and "podUID" not in status["claim"]
    assert status["claim"]["policy"]["tools"] == TEMPLATE["tools"], "the gateway bounds a cold pooled task too"
    job = api["batch"].read_namespaced_job("mcpexec-fallback", namespace)
    assert job.spec.template.spec.containers[0].resources.limits == {"cpu": "1", "memory": "512Mi"}


def test_when_empty_wait_keeps_the_task_pending_until_a_sandbox_is_ready(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    _servers(namespace, "crm", "files")
    _create_pool(namespace, _pool("patient", 1, when_empty="Wait"))
    pods = _idle(namespace, "patient", 1)
    create_task(namespace, agenttask("waits", poolRef={"name": "patient"}, mcpServers=["crm"]))
    waiting = wait_for(lambda: (s := task_status(namespace, "waits")).get("conditions") and s)
    assert waiting["phase"] == "Pending" and condition(waiting, "Accepted")["reason"] == "PoolEmpty"
    assert not api["batch"].list_namespaced_job(namespace).items
    _ready(pods)
    status = wait_for(lambda: (s := task_status(namespace, "waits")).get("claim", {}).get("podName") and s)
    assert status["podName"] == pods[0].metadata.name and status["launchType"] == "Warm"


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"mcpServers": ["crm", "billing"]}, "'billing' is not in the pool's template"),
        ({"mcpServers": ["crm"], "tools": {"allow": ["crm/delete_account"]}}, "'crm/delete_account' is not allowed"),
        ({"mcpServers": ["files"], "tools": {"allow": ["files/write_file"]}}, "'files/write_file' is not allowed"),
    ],
)
def test_a_task_widening_its_pools_policy_is_refused(
    operator: kopf.testing.KopfRunner, namespace: str, spec: dict[str, Any], reason: str
) -> None:
    _servers(namespace, "crm", "files", "billing")
    pods = _warm_pool(namespace, "strict", 1)
    create_task(namespace, agenttask("greedy", poolRef={"name": "strict"}, **spec))
    status = wait_phase(namespace, "greedy", "Failed")
    accepted = condition(status, "Accepted")
    assert accepted["reason"] == "PolicyWidened" and reason in accepted["message"]
    assert "claim" not in status
    idle = _pods(namespace, "strict", "idle")
    assert [p.metadata.name for p in idle] == [pods[0].metadata.name], "no sandbox was claimed"


def test_a_task_naming_a_missing_pool_waits_then_fails(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    create_task(namespace, agenttask("lost", poolRef={"name": "nowhere"}, timeoutSeconds=2))
    status = wait_phase(namespace, "lost", "Failed", timeout=30)
    assert condition(status, "Accepted")["reason"] == "SandboxPoolNotFound"


def test_deleting_a_pool_removes_idle_sandboxes_and_waits_for_claimed_ones(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    _servers(namespace, "crm", "files")
    _warm_pool(namespace, "doomed", 2)
    create_task(namespace, agenttask("last", poolRef={"name": "doomed"}, mcpServers=["crm"]))
    claimed_name = wait_for(lambda: task_status(namespace, "last").get("claim", {}).get("podName"))
    _custom().delete_namespaced_custom_object(GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, "doomed")
    wait_for(lambda: not _pods(namespace, "doomed", "idle"), what="idle sandboxes deleted")
    assert _read_pool(namespace, "doomed")["metadata"]["deletionTimestamp"], "held while a claimed sandbox runs"
    api["core"].read_namespaced_service_account("mcpexec-pool-doomed", namespace)  # its token still resolves
    play_kubelet(api["core"].read_namespaced_pod(claimed_name, namespace), "Succeeded", exit_code=0, message="{}")
    wait_phase(namespace, "last", "Succeeded")

    def pool_gone() -> bool:
        try:
            _read_pool(namespace, "doomed")
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(pool_gone, what="pool deleted")


def test_a_pod_made_to_look_like_an_idle_sandbox_is_never_claimed(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    """Whoever may create pods in the namespace can copy a sandbox's labels, its template hash and the pool as its
    owner. Such a pod, ready and older than the real one, is not counted, and a task never gets it (it would run
    another user's task as that task); one naming the pool as owner is deleted."""
    _servers(namespace, "crm", "files")
    [real] = _warm_pool(namespace, "guarded", 1)
    pool = _read_pool(namespace, "guarded")
    forged = []
    for name, owned in (("forged-free", False), ("forged-owned", True)):
        meta = {"name": name, "labels": real.metadata.labels}
        if owned:
            meta["ownerReferences"] = [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": "SandboxPool",
                    "name": "guarded",
                    "uid": pool["metadata"]["uid"],
                }
            ]
        spec = client.ApiClient().sanitize_for_serialization(real.spec)
        spec.pop("nodeName", None)
        forged.append(api["core"].create_namespaced_pod(namespace, {"metadata": meta, "spec": spec}))
    play_kubelet(forged[0], "Running")  # the owned one may be gone already
    wait_for(
        lambda: not any(p.metadata.name == "forged-owned" for p in _pods(namespace, "guarded")),
        what="owned forgery deleted",
    )
    assert _read_pool(namespace, "guarded")["status"]["replicas"] == 1, "the forgery is not counted"
    # The real sandbox replaced by a younger one: the free forgery is now the oldest ready pod with the labels.
    api["core"].delete_namespaced_pod(real.metadata.name, namespace, grace_period_seconds=0)
    [fresh] = wait_for(
        lambda: (
            (
                pods := [
                    p
                    for p in _pods(namespace, "guarded", "idle")
                    if p.metadata.name not in ("forged-free", real.metadata.name)
                ]
            )
            and pods
        ),
        what="a new sandbox",
    )
    _ready([fresh])
    create_task(namespace, agenttask("victim", poolRef={"name": "guarded"}, mcpServers=["crm"]))
    status = wait_for(lambda: (s := task_status(namespace, "victim")).get("claim", {}).get("podName") and s)
    assert status["claim"]["podUID"] == fresh.metadata.uid
    free = api["core"].read_namespaced_pod("forged-free", namespace)
    assert free.metadata.labels[SANDBOX_STATE_LABEL] == "idle" and TASK_LABEL not in free.metadata.labels


def test_a_pools_skills_and_a_claimed_sandbox_go_with_their_owners(
    operator: kopf.testing.KopfRunner, namespace: str, api: dict[str, Any]
) -> None:
    """The template's skills PVC is made (and outlives the pool) and mounted as the template says; a claimed
    sandbox is its task's: deleting the task deletes the pod (the real garbage collector)."""
    _servers(namespace, "crm", "files")
    [pod] = _warm_pool(namespace, "skilled", 1, skills={"owner": "data-team", "readOnly": True, "size": "2Gi"})
    [volume] = [v for v in pod.spec.volumes if v.name == "skills"]
    assert volume.persistent_volume_claim.claim_name == "skills-data-team" and volume.persistent_volume_claim.read_only
    claim = api["core"].read_namespaced_persistent_volume_claim("skills-data-team", namespace)
    assert claim.spec.resources.requests["storage"] == "2Gi" and not claim.metadata.owner_references
    [mount] = [m for m in pod.spec.containers[0].volume_mounts if m.name == "skills"]
    assert mount.mount_path == "/skills" and mount.read_only is True

    create_task(namespace, agenttask("owner", poolRef={"name": "skilled"}, mcpServers=["crm"]))
    wait_for(lambda: task_status(namespace, "owner").get("claim", {}).get("podName"))
    _custom().delete_namespaced_custom_object(GROUP, VERSION, namespace, "agenttasks", "owner")

    def pod_gone() -> bool:
        try:
            api["core"].read_namespaced_pod(pod.metadata.name, namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(pod_gone, what="the claimed pod collected with its task")
