"""AgentSession -> a claimed warm sandbox of its pool, and that sandbox's end.

A session only ever runs in a warm sandbox: its user is waiting, interactively, so when no idle sandbox is ready it
stays Pending (`Claimed=False`, `PoolEmpty`) and tries again until CLAIM_TIMEOUT_SECONDS have passed, then ends. The
claim is a pooled task's (controller/claims.py: one conditioned patch; the session as the pod's only owner, so
deleting the session deletes the pod), with the pod's activeDeadlineSeconds at what is left of maxLifetimeSeconds.

A session ends (phase Ended, with a reason; its pod deleted, never reused) when its sandbox is gone, at its
`expiresAt`, or when idle past idleTimeoutSeconds. Activity is the gateway's to know: it patches the session's
`status.lastActivity` when it runs an execution (at most every ACTIVITY_EVERY_SECONDS,
gateway/cluster/people/sessions.py), and the operator's sweep compares that with the idle timeout; no request ever
goes from the operator to the gateway.
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
from controller.launch_span import launch_span
from controller.settings import OperatorSettings
from controller.status import sandbox_said
from mcpexec.api import egress
from mcpexec.api.agentsession import AgentSession, SessionPhase, session_task
from mcpexec.api.conditions import (
    Condition,
    ConditionType,
    Progress,
    condition,
    merge_conditions,
    readiness,
)
from mcpexec.api.meta import validation_message
from mcpexec.api.reasons import EventReason, Reason
from mcpexec.api.sandboxpool import Claim, SandboxPool, template_hash, widening
from mcpexec.api.status import AgentSessionStatus
from mcpexec.api.timestamps import format_time, now, parse_time, seconds_since
from mcpexec.tracing import trace_id_of, traceparent_of

# How much of what a session's sandbox said as it ended goes into the session's end message.
SAID_LIMIT = 500
log = logging.getLogger(__name__)

# How long a session waits for an idle sandbox of its pool (or for the pool, its servers) before it ends.
CLAIM_TIMEOUT_SECONDS = 60
CLAIM_RETRY_SECONDS = 1


def _age(document: dict[str, Any]) -> float:
    return seconds_since(document["metadata"]["creationTimestamp"])


# Ends that are the session's normal life (kstatus: Current, not Failed).
NORMAL_ENDS = (Reason.IDLE_TIMEOUT, Reason.MAX_LIFETIME)


def _write(cluster: Cluster, document: dict[str, Any], status: AgentSessionStatus, *conditions: Condition) -> None:
    """The fields `status` sets and `conditions`, merged into the session's status as it is when written (guarded by
    its resourceVersion): the gateway's own conditions (AwaitingApproval) written since `document` was read stay."""
    fields = {name: getattr(status, name) for name in status.model_fields_set}

    def change(current: AgentSessionStatus, observed: int) -> AgentSessionStatus:
        merged = merge_conditions(current.conditions or [], list(conditions), observed)
        return current.model_copy(update={**fields, "observed_generation": observed, "conditions": merged})

    meta = document["metadata"]
    cluster.update_session_status(meta["namespace"], meta["name"], change, known=document)


def end(cluster: Cluster, document: dict[str, Any], reason: Reason, message: str) -> None:
    """Phase Ended with its reason, then the sandbox deleted: nothing of it is reused."""
    meta = document["metadata"]
    status = AgentSessionStatus(phase=SessionPhase.ENDED, reason=reason)
    state = Progress.CURRENT if reason in NORMAL_ENDS else Progress.STALLED
    _write(cluster, document, status, *readiness(False, state, reason, message))
    pod = AgentSessionStatus.of(document).pod_name
    if pod:
        cluster.delete_pod(meta["namespace"], pod)
    cluster.record_event(document, EventReason.ENDED, message, warning=reason not in NORMAL_ENDS)
    log.info("session ended", extra={"namespace": meta["namespace"], "session": meta["name"], "reason": reason})


def _wait(cluster: Cluster, document: dict[str, Any], reason: Reason, message: str) -> None:
    """Pending with why, retried shortly, until CLAIM_TIMEOUT_SECONDS: then the session ends with that reason."""
    if _age(document) > CLAIM_TIMEOUT_SECONDS:
        end(cluster, document, reason, f"{message}; gave up after {CLAIM_TIMEOUT_SECONDS} s")
        return
    status = AgentSessionStatus(phase=SessionPhase.PENDING, reason=reason)
    _write(
        cluster,
        document,
        status,
        condition(ConditionType.CLAIMED, False, reason, message),
        *readiness(None, Progress.IN_PROGRESS, reason, message),
    )
    raise kopf.TemporaryError(message, delay=CLAIM_RETRY_SECONDS)


def to_claim(status: AgentSessionStatus) -> bool:
    """Whether the session still waits for its sandbox: neither ended nor claimed."""
    return status.phase is not SessionPhase.ENDED and not (status.claim is not None and status.claim.pod_name)


def reconcile(cluster: Cluster, settings: OperatorSettings, document: dict[str, Any]) -> None:
    """Claim the session's sandbox (idempotent: a claim made by an interrupted reconcile is found again)."""
    if not to_claim(AgentSessionStatus.of(document)):
        return
    try:
        session = AgentSession.model_validate(document)
    except ValidationError as exc:
        message = validation_message(exc)
        end(cluster, document, Reason.INVALID_SPEC, message)
        return
    namespace, pool_name = session.metadata.namespace, session.spec.pool_ref.name
    pool_document = cluster.pool(namespace, pool_name)
    if pool_document is None or pool_document["metadata"].get("deletionTimestamp"):
        message = f"SandboxPool {pool_name!r} not found in {namespace}"
        _wait(cluster, document, Reason.SANDBOX_POOL_NOT_FOUND, message)
        return
    try:
        template = SandboxPool.model_validate(pool_document).spec.template
    except ValidationError:
        message = f"SandboxPool {pool_name!r} is invalid (see its conditions)"
        _wait(cluster, document, Reason.SANDBOX_POOL_INVALID, message)
        return
    task = session_task(document, template.mcp_servers, template.egress)
    wider = widening(template, task.spec) + egress.widening(task.spec.egress, settings.egress.bounds(namespace))
    if wider:
        end(cluster, document, Reason.POLICY_WIDENED, "; ".join(wider))
        return
    missing = cluster.missing_mcp_servers(namespace, task.spec.mcp_servers) if task.spec.mcp_servers else []
    if missing:
        message = f"MCPServer(s) not found in {namespace}: {', '.join(missing)}"
        _wait(cluster, document, Reason.MCP_SERVER_NOT_FOUND, message)
        return
    owner = manifests.SessionRef(name=session.metadata.name, namespace=namespace, uid=document["metadata"]["uid"])
    left = max(1, int(session.spec.max_lifetime_seconds - _age(document)))
    # The session's own NetworkPolicy while the claim is made (it selects nothing until the claim labels a pod).
    confining = cluster.ensure_soon(manifests.network_policy(owner, settings), owner.uid)
    pod = claims.claimed_by(cluster, pool_document, owner) or claims.claim(
        cluster, pool_document, template_hash(template), owner, left
    )
    confining.result()
    if pod is None:
        message = f"no idle sandbox in SandboxPool {pool_name!r}; waiting for one (a session never starts cold)"
        _wait(cluster, document, Reason.POOL_EMPTY, message)
        return
    meta = pod["metadata"]
    claim = Claim(
        pool=pool_name,
        policy=template.policy(),
        pod_name=meta["name"],
        pod_uid=meta["uid"],
        claim_seconds=claims.waited(document),
    )
    created = parse_time(document["metadata"]["creationTimestamp"])
    message = f"claimed sandbox {meta['name']} of SandboxPool {pool_name}"
    # The claim is the session's first span: the gateway hands the sandbox its traceparent from the status, so its
    # executions' spans go under it.
    with launch_span(document["metadata"]) as span:
        traceparent = traceparent_of(span)
        ready = AgentSessionStatus(
            phase=SessionPhase.READY,
            reason=Reason.SANDBOX_CLAIMED,
            pod_name=meta["name"],
            claim=claim,
            start_time=now(),
            last_activity=now(),
            expires_at=format_time(created + timedelta(seconds=session.spec.max_lifetime_seconds)),
            trace_id=trace_id_of(traceparent),
            traceparent=traceparent,
        )
        claimed = condition(ConditionType.CLAIMED, True, Reason.SANDBOX_CLAIMED, message)
        _write(cluster, document, ready, claimed, *readiness(True, Progress.CURRENT, Reason.SANDBOX_CLAIMED, message))
    cluster.record_event(document, EventReason.CLAIMED, message)


def _sandbox_gone(cluster: Cluster, document: dict[str, Any]) -> str | None:
    """Why the session's claimed sandbox can serve it no more (None: it still can)."""
    claim = AgentSessionStatus.of(document).claim
    assert claim is not None and claim.pod_name, "checked for a claimed session only"
    pod = cluster.pod(document["metadata"]["namespace"], claim.pod_name)
    if pod is None or pod["metadata"]["uid"] != claim.pod_uid:
        return f"the session's sandbox pod {claim.pod_name} was deleted"
    if pod["metadata"].get("deletionTimestamp"):
        return f"the session's sandbox pod {claim.pod_name} is being deleted"
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        reason = (pod.get("status") or {}).get("reason")
        said = sandbox_said(pod)
        detail = f": {said[:SAID_LIMIT]}" if said else ""
        return f"the session's sandbox pod {claim.pod_name} exited ({reason or phase}){detail}"
    return None


def check(cluster: Cluster, document: dict[str, Any]) -> None:
    """End a Ready session whose sandbox is gone, whose lifetime is over, or that has idled too long."""
    status = AgentSessionStatus.of(document)
    if status.phase is not SessionPhase.READY or status.claim is None or not status.claim.pod_name:
        return
    gone = _sandbox_gone(cluster, document)
    if gone is not None:
        end(cluster, document, Reason.SANDBOX_GONE, gone)
        return
    spec = document.get("spec") or {}
    moment = datetime.now(UTC)
    if status.expires_at and moment >= parse_time(status.expires_at):
        end(
            cluster,
            document,
            Reason.MAX_LIFETIME,
            f"the session reached its maxLifetimeSeconds ({spec.get('maxLifetimeSeconds')})",
        )
        return
    idle = int(spec.get("idleTimeoutSeconds") or 0)
    last = status.last_activity or status.start_time
    if idle and last and moment >= parse_time(last) + timedelta(seconds=idle):
        end(cluster, document, Reason.IDLE_TIMEOUT, f"no execution for idleTimeoutSeconds ({idle})")


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
