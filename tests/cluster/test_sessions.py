"""AgentSessions against a real API server and the real operator: a session claims a warm sandbox of its pool (never
a cold one), its deletion deletes the pod, and idling, its lifetime or its pod's end end it. No kubelet runs in this
tier: a test writes the pod status a kubelet would (play_kubelet)."""

from __future__ import annotations

from typing import Any

import kopf.testing
import pytest
from kubernetes import client

from controller import sessions
from controller.kube import Cluster, api_client
from mcpexec.api.conditions import ConditionType, merge_conditions
from mcpexec.api.conditions import condition as make_condition
from mcpexec.api.meta import (
    API_VERSION,
    GROUP,
    POOL_LABEL,
    SANDBOX_STATE_LABEL,
    SANDBOXPOOL_PLURAL,
    SESSION_LABEL,
    VERSION,
)
from mcpexec.api.reasons import Reason
from tests.cluster.kube import condition, play_kubelet, wait_for

AGENTSESSIONS = "agentsessions"
TEMPLATE = {"mcpServers": [], "tools": {"allow": ["crm/*"]}}


def _custom() -> client.CustomObjectsApi:
    return client.CustomObjectsApi()


def warm_pool(namespace: str, name: str, replicas: int, **template: Any) -> list[client.V1Pod]:
    """A SandboxPool whose `replicas` idle sandboxes the kubelet (played here) has started."""
    body = {
        "apiVersion": API_VERSION,
        "kind": "SandboxPool",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "whenEmpty": "Wait", "template": {**TEMPLATE, **template}},
    }
    _custom().create_namespaced_custom_object(GROUP, VERSION, namespace, SANDBOXPOOL_PLURAL, body)
    selector = f"{POOL_LABEL}={name},{SANDBOX_STATE_LABEL}=idle"

    def idle() -> list[client.V1Pod] | None:
        pods = client.CoreV1Api().list_namespaced_pod(namespace, label_selector=selector).items
        return pods if len(pods) == replicas else None

    pods = wait_for(idle, what=f"{replicas} idle pods") if replicas else []
    for pod in pods:
        play_kubelet(pod, "Running")
    return pods


def create_session(namespace: str, name: str, pool: str, **spec: Any) -> dict[str, Any]:
    body = {
        "apiVersion": API_VERSION,
        "kind": "AgentSession",
        "metadata": {"name": name},
        "spec": {"poolRef": {"name": pool}, **spec},
    }
    created: dict[str, Any] = _custom().create_namespaced_custom_object(
        GROUP, VERSION, namespace, AGENTSESSIONS, body, field_validation="Strict"
    )
    return created


def session_status(namespace: str, name: str) -> dict[str, Any]:
    found = _custom().get_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSIONS, name)
    return dict(found.get("status") or {})


def wait_session(namespace: str, name: str, phase: str, timeout: float = 60) -> dict[str, Any]:
    """The session in `phase` as the operator wrote it (a new one reads Pending already: the CRD's status default)."""

    def probe() -> dict[str, Any] | None:
        status = session_status(namespace, name)
        return status if status.get("phase") == phase and status.get("observedGeneration") else None

    return wait_for(probe, timeout, f"{name} {phase}")


def pod_gone(namespace: str, name: str) -> bool:
    pods = client.CoreV1Api().list_namespaced_pod(namespace).items
    return not any(p.metadata.name == name and p.metadata.deletion_timestamp is None for p in pods)


def test_the_operators_write_from_a_stale_read_keeps_the_gateways_condition(namespace: str) -> None:
    """The operator ends a session from the session as it last saw it, after the gateway wrote AwaitingApproval:
    the operator's write is guarded by the resourceVersion and merged again on the conflict, so the condition stays.
    (First in the file: no operator runs yet to write the session in between.)"""
    create_session(namespace, "stale", "no-such-pool")
    stale = _custom().get_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSIONS, "stale")
    held = make_condition(ConditionType.AWAITING_APPROVAL, True, "CallsHeld", "1 call(s) wait for a person's approval")
    written = merge_conditions([], [held], 1)  # as the gateway writes it (gateway/cluster/approval_status.py)
    body = {
        "metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]},
        "status": {"conditions": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in written]},
    }
    _custom().patch_namespaced_custom_object_status(GROUP, VERSION, namespace, AGENTSESSIONS, "stale", body)

    sessions.end(Cluster(api_client(pool_size=1)), stale, Reason.IDLE_TIMEOUT, "idle past its timeout")

    status = session_status(namespace, "stale")
    said = {c["type"]: c["status"] for c in status["conditions"]}
    assert status["phase"] == "Ended"
    assert said["AwaitingApproval"] == "True"
    assert said["Ready"] == "False"


def test_a_session_claims_a_warm_sandbox_and_its_deletion_deletes_the_pod(
    operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    pod = warm_pool(namespace, "interactive", 1)[0]
    created = create_session(namespace, "alice", "interactive", maxLifetimeSeconds=1000)
    status = wait_session(namespace, "alice", "Ready")
    assert status["podName"] == pod.metadata.name
    assert status["claim"]["podUID"] == pod.metadata.uid and status["claim"]["pool"] == "interactive"
    assert status["claim"]["claimSeconds"] >= 0
    assert status["claim"]["policy"]["tools"] == {"allow": ["crm/*"], "deny": []}
    assert status["expiresAt"] and status["lastActivity"] and condition(status, "Claimed")["status"] == "True"
    claimed = client.CoreV1Api().read_namespaced_pod(pod.metadata.name, namespace)
    assert [o.uid for o in claimed.metadata.owner_references] == [created["metadata"]["uid"]]
    assert claimed.metadata.labels[SESSION_LABEL] == "alice"
    assert claimed.metadata.labels[SANDBOX_STATE_LABEL] == "claimed"
    assert 0 < claimed.spec.active_deadline_seconds <= 1010
    policy = client.NetworkingV1Api().read_namespaced_network_policy("mcpexec-session-alice", namespace)
    assert policy.spec.pod_selector.match_labels[SESSION_LABEL] == "alice" and not policy.spec.ingress
    # The pool starts a replacement; the claimed sandbox is no longer idle.
    wait_for(
        lambda: (
            len(client.CoreV1Api().list_namespaced_pod(namespace, label_selector=f"{SANDBOX_STATE_LABEL}=idle").items)
            == 1
        ),
        what="a replacement idle sandbox",
    )

    _custom().delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTSESSIONS, "alice")
    wait_for(lambda: pod_gone(namespace, pod.metadata.name), 60, "the session's pod deleted with it")


def test_no_idle_sandbox_keeps_a_session_pending_then_ends_it(
    operator: kopf.testing.KopfRunner, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "CLAIM_TIMEOUT_SECONDS", 4)  # the operator runs in this process (KopfRunner)
    warm_pool(namespace, "empty", 0)
    create_session(namespace, "waiting", "empty")
    status = wait_session(namespace, "waiting", "Pending")
    claimed = condition(status, "Claimed")
    assert (claimed["status"], claimed["reason"]) == ("False", "PoolEmpty")
    assert "never starts cold" in claimed["message"]
    assert not client.BatchV1Api().list_namespaced_job(namespace).items, "no cold fallback for a session"
    ended = wait_session(namespace, "waiting", "Ended", 30)
    assert ended["reason"] == "PoolEmpty" and "gave up" in condition(ended, "Ready")["message"]


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"idleTimeoutSeconds": 2, "maxLifetimeSeconds": 600}, "IdleTimeout"),
        ({"idleTimeoutSeconds": 4, "maxLifetimeSeconds": 4}, "MaxLifetime"),
    ],
)
def test_idling_or_the_lifetime_ends_a_session_and_its_sandbox(
    operator: kopf.testing.KopfRunner, namespace: str, spec: dict[str, int], reason: str
) -> None:
    pod = warm_pool(namespace, "short", 1)[0]
    create_session(namespace, "brief", "short", **spec)
    wait_session(namespace, "brief", "Ready")
    ended = wait_session(namespace, "brief", "Ended", 30)
    assert ended["reason"] == reason
    assert condition(ended, "Ready")["reason"] == reason
    wait_for(lambda: pod_gone(namespace, pod.metadata.name), 60, "the ended session's pod deleted")


def test_a_sessions_sandbox_gone_ends_it(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    pod = warm_pool(namespace, "fragile", 1)[0]
    create_session(namespace, "crashy", "fragile")
    wait_session(namespace, "crashy", "Ready")
    play_kubelet(client.CoreV1Api().read_namespaced_pod(pod.metadata.name, namespace), "Failed", exit_code=137)
    ended = wait_session(namespace, "crashy", "Ended", 30)
    assert ended["reason"] == "SandboxGone" and pod.metadata.name in condition(ended, "Ready")["message"]


def test_a_session_asking_for_more_than_its_pool_is_refused(operator: kopf.testing.KopfRunner, namespace: str) -> None:
    warm_pool(namespace, "narrow", 1)
    create_session(namespace, "greedy", "narrow", tools={"allow": ["mail/send"]})
    ended = wait_session(namespace, "greedy", "Ended", 30)
    assert ended["reason"] == "PolicyWidened" and not ended.get("podName")
