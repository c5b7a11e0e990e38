"""AgentTask reconcile: a task -> its objects (a Job of its own, or a claimed pool sandbox), Job and pod state -> its
status, and the periodic sweep; what a phase change means (an Event, metrics, the ledger's outcome) in one place.

Reconciles are idempotent (deterministic names, create-or-find), so an operator killed at any point and started
again finishes the work without duplicates.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from controller import claims, ledger, manifests
from controller.kube import Cluster, StatusUpdate
from controller.metrics import (
    POOL_EVENTS,
    RECONCILE_ERRORS,
    RECONCILE_SECONDS,
    RECONCILES,
    STATUS_SYNCS,
    observe_claim,
    observe_start,
)
from controller.naming import child_name
from controller.settings import OperatorSettings
from controller.status import merge, observe, observe_sandbox
from mcpexec.api.agenttask import AgentTaskSpec, Phase
from mcpexec.api.conditions import ConditionType, condition, find
from mcpexec.api.meta import validation_message
from mcpexec.api.reasons import EventReason, Reason
from mcpexec.api.sandboxpool import Claim, LaunchType, SandboxPool, WhenEmpty, pooled_spec, template_hash, widening
from mcpexec.api.status import AgentTaskStatus
from mcpexec.api.timestamps import now, parse_time

PREREQUISITE_RETRY_SECONDS = 5
# A task waiting for a pool's idle sandbox (whenEmpty: Wait) looks again this often.
POOL_WAIT_RETRY_SECONDS = 1
log = logging.getLogger(__name__)


def write_status(cluster: Cluster, namespace: str, name: str, observed: AgentTaskStatus) -> AgentTaskStatus | None:
    """Merge what was observed into the task's status (controller/status.py: merge), then say what its phase change
    means. None when the task is gone."""
    update = cluster.update_task_status(
        namespace, name, lambda current, generation: merge(current, observed, generation)
    )
    if update is None:
        return None
    # A new task's status already reads Pending (the CRD's default): its first write is an event too.
    if update.written and (update.after.phase != update.before.phase or not update.before.observed_generation):
        _record_phase(cluster, update)
        if update.after.finished and update.after.phase != update.before.phase:
            _record_outcome(cluster, update)
    return update.after


def _record_phase(cluster: Cluster, update: StatusUpdate) -> None:
    """A Kubernetes Event per phase change, so `kubectl describe` tells the task's story."""
    status = update.after
    phase = status.phase or Phase.PENDING
    conditions = status.conditions or []
    latest = find(conditions, ConditionType.FINISHED) or find(conditions, ConditionType.ACCEPTED)
    message = (latest.message if latest else "") or f"task is {phase.value}"
    cluster.record_event(update.task, phase.value, message, warning=phase in (Phase.FAILED, Phase.TIMED_OUT))
    if phase is Phase.RUNNING:
        observe_start(update.task["metadata"]["creationTimestamp"], (status.launch_type or LaunchType.COLD).value)


def _record_outcome(cluster: Cluster, update: StatusUpdate) -> None:
    """The finished run's outcome into the namespace's ledger (controller/ledger.py)."""
    meta, status = update.task["metadata"], update.after
    finished = find(status.conditions or [], ConditionType.FINISHED)
    reason = finished.reason if finished else ""
    phase = status.phase or Phase.PENDING
    try:
        cluster.update_ledger(
            meta["namespace"], lambda entries: ledger.finished(entries, meta["name"], meta["uid"], phase, reason)
        )
    except ApiException as exc:  # the entry written at the start already keeps the name from running again
        log.warning("could not record the outcome of %s/%s: %s", meta["namespace"], meta["name"], exc.status)


def _refuse(
    cluster: Cluster,
    namespace: str,
    name: str,
    reason: Reason,
    message: str,
    final: bool,
    retry_seconds: float = PREREQUISITE_RETRY_SECONDS,
) -> None:
    """Record why the task cannot run; a final refusal fails it, otherwise it waits for a retry."""
    conditions = [condition(ConditionType.ACCEPTED, False, reason, message)]
    if final:
        conditions.append(condition(ConditionType.FINISHED, True, reason, message))
    observed = AgentTaskStatus(phase=Phase.FAILED if final else Phase.PENDING, conditions=conditions)
    if final:
        observed.completion_time = now()
    write_status(cluster, namespace, name, observed)
    if not final:
        raise kopf.TemporaryError(message, delay=retry_seconds)


def _past_deadline(document: dict[str, Any], spec: AgentTaskSpec) -> bool:
    created = parse_time(document["metadata"]["creationTimestamp"])
    return datetime.now(UTC) > created + timedelta(seconds=spec.timeout_seconds)


def _missing_prerequisite(cluster: Cluster, namespace: str, spec: AgentTaskSpec) -> tuple[Reason, str] | None:
    """Fail closed: no gVisor RuntimeClass -> no Job; every named MCPServer must exist."""
    if not cluster.runtime_class_exists(spec.runtime_class_name):
        return (
            Reason.RUNTIME_CLASS_NOT_FOUND,
            f"RuntimeClass {spec.runtime_class_name!r} does not exist; refusing to run the task without its sandbox",
        )
    missing = cluster.missing_mcp_servers(namespace, spec.mcp_servers) if spec.mcp_servers else []
    if missing:
        return Reason.MCP_SERVER_NOT_FOUND, f"MCPServer(s) not found in namespace {namespace}: {', '.join(missing)}"
    return None


def reconcile(cluster: Cluster, settings: OperatorSettings, document: dict[str, Any]) -> None:
    """Run the task once: refused (for now or for good), finished without running (its name already ran), or its
    sandbox started (a Job of its own, or a claimed pool sandbox)."""
    meta = document["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    if AgentTaskStatus.of(document).finished:
        return
    with RECONCILE_SECONDS.time():
        try:
            spec = AgentTaskSpec.model_validate(dict(document["spec"]))
        except ValidationError as exc:
            RECONCILES.labels(outcome="invalid").inc()
            message = validation_message(exc)
            _refuse(cluster, namespace, name, Reason.INVALID_SPEC, message, final=True)
            return
        task = manifests.TaskRef(name=name, namespace=namespace, uid=meta["uid"])
        if _ran_before(cluster, document, task):
            return
        try:
            if spec.pool_ref is None:
                _run_cold(cluster, settings, document, task, spec, None)
            else:
                _run_pooled(cluster, settings, document, task, spec)
        except kopf.TemporaryError:
            RECONCILES.labels(outcome="waiting").inc()
            raise
        except Exception as exc:
            RECONCILE_ERRORS.labels(error=type(exc).__name__).inc()
            raise


def _ran_before(cluster: Cluster, document: dict[str, Any], task: manifests.TaskRef) -> bool:
    """A task whose name already ran here (and that does not ask to run again) is finished without running
    (controller/ledger.py)."""
    refused = ledger.refusal(cluster.read_ledger(task.namespace).get(task.name), document)
    if refused is None:
        return False
    conditions = [
        condition(ConditionType.ACCEPTED, False, refused.reason, refused.message),
        condition(ConditionType.FINISHED, True, refused.reason, refused.message),
    ]
    observed = AgentTaskStatus(phase=refused.phase, completion_time=now(), conditions=conditions)
    write_status(cluster, task.namespace, task.name, observed)
    RECONCILES.labels(outcome="already-ran").inc()
    return True


def _started(cluster: Cluster, document: dict[str, Any]) -> None:
    """Into the ledger before the code can start: from now on, a re-created task of this name does not run."""
    cluster.update_ledger(document["metadata"]["namespace"], lambda entries: ledger.started(entries, document))


def _accepted(
    document: dict[str, Any], spec: AgentTaskSpec, launch: LaunchType, reason: Reason, message: str
) -> AgentTaskStatus:
    return AgentTaskStatus(
        phase=Phase.PENDING,
        mode=spec.mode,
        launch_type=launch,
        observed_generation=document["metadata"].get("generation", 1),
        conditions=[condition(ConditionType.ACCEPTED, True, reason, message)],
    )


def _run_cold(
    cluster: Cluster,
    settings: OperatorSettings,
    document: dict[str, Any],
    task: manifests.TaskRef,
    spec: AgentTaskSpec,
    claim: Claim | None,
) -> None:
    """A Job of the task's own (a pooled task's has the pool's sandbox, and its claim is written first: the gateway
    bounds the task by the pool's policy before its code can start)."""
    missing = _missing_prerequisite(cluster, task.namespace, spec)
    if missing is not None:
        # Waited for (GitOps may apply them after the task) until the task's own deadline.
        _refuse(cluster, task.namespace, task.name, *missing, final=_past_deadline(document, spec))
        RECONCILES.labels(outcome="refused").inc()
        return
    if claim is not None:
        write_status(cluster, task.namespace, task.name, AgentTaskStatus(claim=claim))
    if spec.skills is not None:
        cluster.ensure(manifests.skills_claim(task.namespace, spec.skills), owner_uid=None)
    cluster.ensure(manifests.service_account(task), task.uid)
    cluster.ensure(manifests.task_config(task, spec), task.uid)
    cluster.ensure(manifests.network_policy(task, settings), task.uid)
    _started(cluster, document)
    cluster.ensure(manifests.job(task, spec, settings), task.uid)
    observed = _accepted(document, spec, LaunchType.COLD, Reason.JOB_CREATED, "sandboxed Job created")
    observed.job_name = child_name(task.name)
    write_status(cluster, task.namespace, task.name, observed)
    observe_claim(document["metadata"]["creationTimestamp"], LaunchType.COLD.value)
    RECONCILES.labels(outcome="created").inc()


def _run_pooled(
    cluster: Cluster, settings: OperatorSettings, document: dict[str, Any], task: manifests.TaskRef, spec: AgentTaskSpec
) -> None:
    """Claim an idle sandbox of the task's pool; none ready: a cold Job, or wait, as the pool says."""
    assert spec.pool_ref is not None
    pool_document = cluster.read_pool(task.namespace, spec.pool_ref.name)
    if pool_document is None or pool_document["metadata"].get("deletionTimestamp"):
        message = f"SandboxPool {spec.pool_ref.name!r} not found in namespace {task.namespace}"
        final = _past_deadline(document, spec)
        _refuse(cluster, task.namespace, task.name, Reason.SANDBOX_POOL_NOT_FOUND, message, final=final)
        RECONCILES.labels(outcome="refused").inc()
        return
    try:
        pool = SandboxPool.model_validate(pool_document)
    except ValidationError:
        message = f"SandboxPool {spec.pool_ref.name!r} is invalid (see its Ready condition)"
        final = _past_deadline(document, spec)
        _refuse(cluster, task.namespace, task.name, Reason.SANDBOX_POOL_INVALID, message, final=final)
        return
    template = pool.spec.template
    wider = widening(template, spec)
    if wider:
        _refuse(cluster, task.namespace, task.name, Reason.POLICY_WIDENED, "; ".join(wider), final=True)
        RECONCILES.labels(outcome="invalid").inc()
        return
    ceiling = Claim(pool=pool.metadata.name, policy=template.policy())
    missing = cluster.missing_mcp_servers(task.namespace, spec.mcp_servers) if spec.mcp_servers else []
    if missing:
        message = f"MCPServer(s) not found in namespace {task.namespace}: {', '.join(missing)}"
        final = _past_deadline(document, spec)
        _refuse(cluster, task.namespace, task.name, Reason.MCP_SERVER_NOT_FOUND, message, final=final)
        return
    pod = claims.claimed_by(cluster, pool_document, task)
    if pod is None:
        _started(cluster, document)
        pod = claims.claim(cluster, pool_document, template_hash(template), task, spec.timeout_seconds)
    if pod is not None:
        _claimed(cluster, settings, document, task, spec, ceiling, pod)
        return
    cluster.update_ledger(task.namespace, lambda entries: ledger.forget(entries, task.name, task.uid))
    if pool.spec.when_empty is WhenEmpty.WAIT:
        message = f"no idle sandbox in SandboxPool {pool.metadata.name!r}; waiting for one (whenEmpty: Wait)"
        final = _past_deadline(document, spec)
        _refuse(
            cluster,
            task.namespace,
            task.name,
            Reason.POOL_EMPTY,
            message,
            final=final,
            retry_seconds=POOL_WAIT_RETRY_SECONDS,
        )
        return
    _run_cold(cluster, settings, document, task, pooled_spec(template, spec), ceiling)


def _claimed(
    cluster: Cluster,
    settings: OperatorSettings,
    document: dict[str, Any],
    task: manifests.TaskRef,
    spec: AgentTaskSpec,
    ceiling: Claim,
    pod: dict[str, Any],
) -> None:
    """Record the claim in the task's status (what the gateway trusts), and the task's own NetworkPolicy (it
    selects the pod by the task's labels, so the pod stays confined when the pool and its policy are gone)."""
    cluster.ensure(manifests.network_policy(task, settings), task.uid)
    meta = pod["metadata"]
    claim = ceiling.model_copy(update={"pod_name": meta["name"], "pod_uid": meta["uid"]})
    message = f"claimed sandbox {meta['name']} of SandboxPool {ceiling.pool}"
    observed = _accepted(document, spec, LaunchType.WARM, Reason.SANDBOX_CLAIMED, message)
    observed.pod_name, observed.start_time, observed.claim = meta["name"], now(), claim
    write_status(cluster, task.namespace, task.name, observed)
    cluster.record_event(document, EventReason.CLAIMED, message)
    observe_claim(document["metadata"]["creationTimestamp"], LaunchType.WARM.value)
    POOL_EVENTS.labels(event="claimed").inc()
    RECONCILES.labels(outcome="claimed").inc()


def sync(cluster: Cluster, namespace: str, name: str) -> None:
    """Fold the Job's and its pod's state into the task's status (only for the Job this task owns), or the state of
    the pool sandbox it claimed."""
    task = cluster.read_task(namespace, name)
    if task is None:
        return
    claim = AgentTaskStatus.of(task).claim
    if claim is not None and claim.pod_name:
        pod = cluster.read_pod(namespace, claim.pod_name)
        if pod is not None and pod["metadata"]["uid"] != claim.pod_uid:
            pod = None
        if write_status(cluster, namespace, name, observe_sandbox(pod)) is not None:
            STATUS_SYNCS.inc()
        return
    job, pods = cluster.job_and_pods(namespace, child_name(name))
    if job is None:
        return
    owners = {ref.get("uid") for ref in job["metadata"].get("ownerReferences") or []}
    if task["metadata"]["uid"] not in owners:
        return
    if write_status(cluster, namespace, name, observe(job, pods)) is not None:
        STATUS_SYNCS.inc()


def sweep(cluster: Cluster) -> None:
    """Resync unfinished tasks (a net for missed watch events); past a finished task's ttlSecondsAfterFinished,
    delete what it ran in (its Job and pods, ConfigMap, ServiceAccount, NetworkPolicy, a claimed sandbox), never
    the task: a GitOps controller would re-create it (docs/gitops.md)."""
    for task in cluster.list_tasks():
        meta, status = task["metadata"], AgentTaskStatus.of(task)
        claimed = status.claim.pod_name if status.claim else None
        if not status.finished:
            if status.job_name or claimed:
                sync(cluster, meta["namespace"], meta["name"])
            continue
        ttl = (task.get("spec") or {}).get("ttlSecondsAfterFinished")
        finished_at = status.completion_time
        if ttl is None or not finished_at or status.children_deleted_at:
            continue
        if datetime.now(UTC) >= parse_time(finished_at) + timedelta(seconds=ttl):
            cluster.delete_children(meta["namespace"], meta["name"])
            if claimed:
                cluster.delete_pod(meta["namespace"], claimed)
            cluster.patch_task_status(meta["namespace"], meta["name"], AgentTaskStatus(children_deleted_at=now()))
