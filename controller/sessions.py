"""AgentSession -> a claimed warm sandbox of its pool, and that sandbox's end.

A session only ever runs in a warm sandbox: its user is waiting, interactively, so when no idle sandbox is ready it
stays Pending (`Claimed=False`, `PoolEmpty`) and tries again until CLAIM_TIMEOUT_SECONDS have passed, then ends. The
claim is a pooled task's (controller/claims.py: one conditioned patch; the session as the pod's only owner, so
deleting the session deletes the pod), with the pod's activeDeadlineSeconds at what is left of maxLifetimeSeconds.

A session ends (phase Ended, with a reason; its pod deleted, never reused) when its sandbox is gone, at its
`expiresAt`, or when idle past idleTimeoutSeconds. Activity is the gateway's to know: it patches the session's
`status.lastActivity` when it runs an execution (at most every ACTIVITY_EVERY_SECONDS, gateway/cluster/sessions.py),
and the operator's sweep compares that with the idle timeout; no request ever goes from the operator to the gateway.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from controller import claims, manifests
from controller.kube import Cluster
from controller.settings import OperatorSettings
from mcpexec.api.agentsession import AgentSession, SessionPhase, session_task
from mcpexec.api.conditions import Progress, condition, generation, merge_conditions, now, readiness
from mcpexec.api.meta import validation_message
from mcpexec.api.sandboxpool import Claim, SandboxPool, template_hash, widening

log = logging.getLogger(__name__)

# How long a session waits for an idle sandbox of its pool (or for the pool, its servers) before it ends.
CLAIM_TIMEOUT_SECONDS = 60
CLAIM_RETRY_SECONDS = 1


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(document: dict[str, Any]) -> float:
    return (datetime.now(UTC) - _time(document["metadata"]["creationTimestamp"])).total_seconds()


# Ends that are the session's normal life (kstatus: Current, not Failed).
NORMAL_ENDS = ("IdleTimeout", "MaxLifetime")


def _write(cluster: Cluster, document: dict[str, Any], status: dict[str, Any], *conditions: dict[str, Any]) -> None:
    current = (document.get("status") or {}).get("conditions") or []
    observed = generation(document)
    merged = merge_conditions(current, list(conditions), observed)
    meta = document["metadata"]
    update = {**status, "observedGeneration": observed, "conditions": merged}
    cluster.patch_session_status(meta["namespace"], meta["name"], update)


def end(cluster: Cluster, document: dict[str, Any], reason: str, message: str) -> None:
    """Phase Ended with its reason, then the sandbox deleted: nothing of it is reused."""
    meta = document["metadata"]
    status = {"phase": SessionPhase.ENDED.value, "reason": reason}
    state = Progress.CURRENT if reason in NORMAL_ENDS else Progress.STALLED
    _write(cluster, document, status, *readiness(False, state, reason, message))
    pod = (document.get("status") or {}).get("podName")
    if pod:
        cluster.delete_pod(meta["namespace"], pod)
    cluster.record_event(document, "Ended", message, warning=reason not in NORMAL_ENDS)
    log.info("session ended", extra={"namespace": meta["namespace"], "session": meta["name"], "reason": reason})


def _wait(cluster: Cluster, document: dict[str, Any], reason: str, message: str) -> None:
    """Pending with why, retried shortly, until CLAIM_TIMEOUT_SECONDS: then the session ends with that reason."""
    if _age(document) > CLAIM_TIMEOUT_SECONDS:
        end(cluster, document, reason, f"{message}; gave up after {CLAIM_TIMEOUT_SECONDS} s")
        return
    status = {"phase": SessionPhase.PENDING.value, "reason": reason}
    _write(
        cluster,
        document,
        status,
        condition("Claimed", False, reason, message),
        *readiness(None, Progress.IN_PROGRESS, reason, message),
    )
    raise kopf.TemporaryError(message, delay=CLAIM_RETRY_SECONDS)


def reconcile(cluster: Cluster, settings: OperatorSettings, document: dict[str, Any]) -> None:
    """Claim the session's sandbox (idempotent: a claim made by an interrupted reconcile is found again)."""
    status = document.get("status") or {}
    if status.get("phase") == SessionPhase.ENDED.value or (status.get("claim") or {}).get("podName"):
        return
    try:
        session = AgentSession.model_validate(document)
    except ValidationError as exc:
        message = validation_message(exc)
        end(cluster, document, "InvalidSpec", message)
        return
    namespace, pool_name = session.metadata.namespace, session.spec.pool_ref.name
    pool_document = cluster.read_pool(namespace, pool_name)
    if pool_document is None or pool_document["metadata"].get("deletionTimestamp"):
        _wait(cluster, document, "SandboxPoolNotFound", f"SandboxPool {pool_name!r} not found in {namespace}")
        return
    try:
        template = SandboxPool.model_validate(pool_document).spec.template
    except ValidationError:
        _wait(cluster, document, "SandboxPoolInvalid", f"SandboxPool {pool_name!r} is invalid (see its conditions)")
        return
    task = session_task(document, template.mcp_servers)
    wider = widening(template, task.spec)
    if wider:
        end(cluster, document, "PolicyWidened", "; ".join(wider))
        return
    missing = cluster.missing_mcp_servers(namespace, task.spec.mcp_servers) if task.spec.mcp_servers else []
    if missing:
        _wait(cluster, document, "MCPServerNotFound", f"MCPServer(s) not found in {namespace}: {', '.join(missing)}")
        return
    owner = manifests.SessionRef(name=session.metadata.name, namespace=namespace, uid=document["metadata"]["uid"])
    left = max(1, int(session.spec.max_lifetime_seconds - _age(document)))
    pod = claims.claimed_by(cluster, pool_document, owner) or claims.claim(
        cluster, pool_document, template_hash(template), owner, left
    )
    if pod is None:
        message = f"no idle sandbox in SandboxPool {pool_name!r}; waiting for one (a session never starts cold)"
        _wait(cluster, document, "PoolEmpty", message)
        return
    cluster.ensure(manifests.network_policy(owner, settings), owner.uid)
    meta = pod["metadata"]
    claim = Claim(pool=pool_name, policy=template.policy(), pod_name=meta["name"], pod_uid=meta["uid"])
    created = _time(document["metadata"]["creationTimestamp"])
    message = f"claimed sandbox {meta['name']} of SandboxPool {pool_name}"
    ready = {
        "phase": SessionPhase.READY.value,
        "reason": "SandboxClaimed",
        "podName": meta["name"],
        "claim": claim.model_dump(mode="json", by_alias=True, exclude_none=True),
        "startTime": now(),
        "lastActivity": now(),
        "expiresAt": _stamp(created + timedelta(seconds=session.spec.max_lifetime_seconds)),
    }
    claimed = condition("Claimed", True, "SandboxClaimed", message)
    _write(cluster, document, ready, claimed, *readiness(True, Progress.CURRENT, "SandboxClaimed", message))
    cluster.record_event(document, "Claimed", message)


def _sandbox_gone(cluster: Cluster, document: dict[str, Any]) -> str | None:
    """Why the session's claimed sandbox can serve it no more (None: it still can)."""
    claim = (document.get("status") or {}).get("claim") or {}
    pod = cluster.read_pod(document["metadata"]["namespace"], claim["podName"])
    if pod is None or pod["metadata"]["uid"] != claim.get("podUID"):
        return f"the session's sandbox pod {claim['podName']} was deleted"
    if pod["metadata"].get("deletionTimestamp"):
        return f"the session's sandbox pod {claim['podName']} is being deleted"
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        reason = (pod.get("status") or {}).get("reason")
        return f"the session's sandbox pod {claim['podName']} exited ({reason or phase})"
    return None


def check(cluster: Cluster, document: dict[str, Any]) -> None:
    """End a Ready session whose sandbox is gone, whose lifetime is over, or that has idled too long."""
    status = document.get("status") or {}
    if status.get("phase") != SessionPhase.READY.value or not (status.get("claim") or {}).get("podName"):
        return
    gone = _sandbox_gone(cluster, document)
    if gone is not None:
        end(cluster, document, "SandboxGone", gone)
        return
    spec = document.get("spec") or {}
    moment = datetime.now(UTC)
    if status.get("expiresAt") and moment >= _time(status["expiresAt"]):
        end(
            cluster,
            document,
            "MaxLifetime",
            f"the session reached its maxLifetimeSeconds ({spec.get('maxLifetimeSeconds')})",
        )
        return
    idle = int(spec.get("idleTimeoutSeconds") or 0)
    last = status.get("lastActivity") or status.get("startTime")
    if idle and last and moment >= _time(last) + timedelta(seconds=idle):
        end(cluster, document, "IdleTimeout", f"no execution for idleTimeoutSeconds ({idle})")


def sweep(cluster: Cluster) -> None:
    """Every session's expiry (the operator's periodic sweep)."""
    for document in cluster.list_sessions():
        try:
            check(cluster, document)
        except ApiException as exc:  # one session's trouble (its namespace going away) must not keep the others
            meta = document["metadata"]
            log.warning(
                "session check failed", extra={"session": f"{meta['namespace']}/{meta['name']}", "status": exc.status}
            )
