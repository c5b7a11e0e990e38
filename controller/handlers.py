"""kopf handlers: AgentTask -> its objects, and Job/Pod state -> AgentTask status; SandboxPools and AgentSessions
(their logic: pools.py, sessions.py).

Reconciles are idempotent (deterministic names, create-or-find), so an operator killed at any point
and started again finishes the work without duplicates. kopf keeps its own bookkeeping in annotations,
so the status subresource holds only what the CRD declares.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
from prometheus_client import start_http_server
from pydantic import ValidationError

from controller import claims, ledger, manifests, pools, sessions
from controller import status as task_status
from controller.diffbase import DigestedDiffBaseStorage
from controller.kube import Cluster, api_client
from controller.metrics import (
    POOL_EVENTS,
    POOL_SANDBOXES,
    RECONCILE_ERRORS,
    RECONCILE_SECONDS,
    RECONCILES,
    STATUS_SYNCS,
    TASK_PHASES,
    observe_claim,
)
from controller.naming import child_name
from controller.settings import OperatorSettings
from mcpexec.api.agenttask import AgentTaskSpec, Phase
from mcpexec.api.conditions import condition, now
from mcpexec.api.meta import (
    AGENTSESSION_PLURAL,
    AGENTTASK_PLURAL,
    GROUP,
    MANAGED_LABELS,
    POOL_LABEL,
    SANDBOXPOOL_PLURAL,
    SESSION_LABEL,
    TASK_LABEL,
    VERSION,
    validation_message,
)
from mcpexec.api.sandboxpool import Claim, LaunchType, SandboxPool, WhenEmpty, pooled_spec, template_hash, widening

TASKS = (GROUP, VERSION, AGENTTASK_PLURAL)
POOLS = (GROUP, VERSION, SANDBOXPOOL_PLURAL)
SESSIONS = (GROUP, VERSION, AGENTSESSION_PLURAL)
SESSION_POD_LABELS: dict[str, Any] = {**MANAGED_LABELS, SESSION_LABEL: kopf.PRESENT}
CHILD_LABELS: dict[str, Any] = {**MANAGED_LABELS, TASK_LABEL: kopf.PRESENT}
POOL_POD_LABELS: dict[str, Any] = {**MANAGED_LABELS, POOL_LABEL: kopf.PRESENT}
PREREQUISITE_RETRY_SECONDS = 5
# A task waiting for a pool's idle sandbox (whenEmpty: Wait) looks again this often.
POOL_WAIT_RETRY_SECONDS = 1
HANDLER_THREADS = 16
logger = logging.getLogger(__name__)
_metrics_started: set[int] = set()


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = DigestedDiffBaseStorage(prefix=GROUP)
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = HANDLER_THREADS
    memo.settings = OperatorSettings()
    memo.cluster = Cluster(api_client(pool_size=HANDLER_THREADS + 4))
    memo.pool_locks = {}
    for wanted in memo.settings.generated_secrets:
        value = secrets.token_urlsafe(wanted.bytes)
        if memo.cluster.create_secret_once(memo.settings.gateway_namespace, wanted.name, wanted.key, value):
            logger.info("generated Secret %s/%s", memo.settings.gateway_namespace, wanted.name)
    port = memo.settings.metrics_port
    if port and port not in _metrics_started:
        start_http_server(port)
        _metrics_started.add(port)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """Service-account credentials in a pod, else $KUBECONFIG as it is now (not as it was at import)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


def _write(memo: kopf.Memo, namespace: str, name: str, observed: task_status.Status) -> None:
    memo.cluster.update_task_status(namespace, name, observed)


def _refuse(
    memo: kopf.Memo,
    namespace: str,
    name: str,
    reason: str,
    message: str,
    final: bool,
    retry_seconds: float = PREREQUISITE_RETRY_SECONDS,
) -> None:
    """Record why the task cannot run; a final refusal fails it, otherwise it waits for a retry."""
    phase = Phase.FAILED if final else Phase.PENDING
    conditions = [condition("Accepted", False, reason, message)]
    if final:
        conditions.append(condition("Finished", True, reason, message))
    observed: task_status.Status = {"phase": phase.value, "conditions": conditions}
    if final:
        observed["completionTime"] = now()
    _write(memo, namespace, name, observed)
    if not final:
        raise kopf.TemporaryError(message, delay=retry_seconds)


def _past_deadline(body: kopf.Body, spec: AgentTaskSpec) -> bool:
    created = datetime.fromisoformat(body["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    return datetime.now(UTC) > created + timedelta(seconds=spec.timeout_seconds)


def _missing_prerequisite(cluster: Cluster, namespace: str, spec: AgentTaskSpec) -> tuple[str, str] | None:
    """Fail closed: no gVisor RuntimeClass -> no Job; every named MCPServer must exist."""
    if not cluster.runtime_class_exists(spec.runtime_class_name):
        return (
            "RuntimeClassNotFound",
            f"RuntimeClass {spec.runtime_class_name!r} does not exist; refusing to run the task without its sandbox",
        )
    missing = cluster.missing_mcp_servers(namespace, spec.mcp_servers) if spec.mcp_servers else []
    if missing:
        return "MCPServerNotFound", f"MCPServer(s) not found in namespace {namespace}: {', '.join(missing)}"
    return None


@kopf.on.resume(*TASKS, id="reconcile-resume")
@kopf.on.create(*TASKS, id="reconcile")
def reconcile(body: kopf.Body, name: str, namespace: str | None, uid: str, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "AgentTask is namespaced"
    current = body.get("status") or {}
    if current.get("phase") and Phase(current["phase"]).finished:
        return
    with RECONCILE_SECONDS.time():
        try:
            spec = AgentTaskSpec.model_validate(dict(body["spec"]))
        except ValidationError as exc:
            RECONCILES.labels(outcome="invalid").inc()
            message = validation_message(exc)
            _refuse(memo, namespace, name, "InvalidSpec", message, final=True)
            return
        task = manifests.TaskRef(name=name, namespace=namespace, uid=uid)
        if _ran_before(memo, body, task):
            return
        try:
            if spec.pool_ref is None:
                _run_cold(memo, body, task, spec, None)
            else:
                _run_pooled(memo, body, task, spec)
        except kopf.TemporaryError:
            RECONCILES.labels(outcome="waiting").inc()
            raise
        except Exception as exc:
            RECONCILE_ERRORS.labels(error=type(exc).__name__).inc()
            raise


def _ran_before(memo: kopf.Memo, body: kopf.Body, task: manifests.TaskRef) -> bool:
    """A task whose name already ran here (and that does not ask to run again) is finished without running
    (controller/ledger.py)."""
    cluster: Cluster = memo.cluster
    refused = ledger.refusal(cluster.read_ledger(task.namespace).get(task.name), dict(body))
    if refused is None:
        return False
    reason, message = refused.pop("reason"), refused.pop("message")
    conditions = [condition("Accepted", False, reason, message), condition("Finished", True, reason, message)]
    _write(memo, task.namespace, task.name, refused | {"conditions": conditions})
    RECONCILES.labels(outcome="already-ran").inc()
    return True


def _started(memo: kopf.Memo, body: kopf.Body) -> None:
    """Into the ledger before the code can start: from now on, a re-created task of this name does not run."""
    memo.cluster.update_ledger(body["metadata"]["namespace"], lambda entries: ledger.started(entries, dict(body)))


def _accepted(
    body: kopf.Body, spec: AgentTaskSpec, launch: LaunchType, reason: str, message: str
) -> task_status.Status:
    return {
        "phase": Phase.PENDING.value,
        "mode": spec.mode,
        "launchType": launch.value,
        "observedGeneration": body["metadata"].get("generation", 1),
        "conditions": [condition("Accepted", True, reason, message)],
    }


def _run_cold(
    memo: kopf.Memo, body: kopf.Body, task: manifests.TaskRef, spec: AgentTaskSpec, claim: Claim | None
) -> None:
    """A Job of the task's own (a pooled task's has the pool's sandbox, and its claim is written first: the gateway
    bounds the task by the pool's policy before its code can start)."""
    settings: OperatorSettings = memo.settings
    cluster: Cluster = memo.cluster
    missing = _missing_prerequisite(cluster, task.namespace, spec)
    if missing is not None:
        # Waited for (GitOps may apply them after the task) until the task's own deadline.
        _refuse(memo, task.namespace, task.name, *missing, final=_past_deadline(body, spec))
        RECONCILES.labels(outcome="refused").inc()
        return
    if claim is not None:
        _write(
            memo, task.namespace, task.name, {"claim": claim.model_dump(mode="json", by_alias=True, exclude_none=True)}
        )
    if spec.skills is not None:
        cluster.ensure(manifests.skills_claim(task.namespace, spec.skills), owner_uid=None)
    cluster.ensure(manifests.service_account(task), task.uid)
    cluster.ensure(manifests.task_config(task, spec), task.uid)
    cluster.ensure(manifests.network_policy(task, settings), task.uid)
    _started(memo, body)
    cluster.ensure(manifests.job(task, spec, settings), task.uid)
    observed = _accepted(body, spec, LaunchType.COLD, "JobCreated", "sandboxed Job created")
    _write(memo, task.namespace, task.name, observed | {"jobName": child_name(task.name)})
    observe_claim(body["metadata"]["creationTimestamp"], LaunchType.COLD.value)
    RECONCILES.labels(outcome="created").inc()


def _run_pooled(memo: kopf.Memo, body: kopf.Body, task: manifests.TaskRef, spec: AgentTaskSpec) -> None:
    """Claim an idle sandbox of the task's pool; none ready: a cold Job, or wait, as the pool says."""
    assert spec.pool_ref is not None
    cluster: Cluster = memo.cluster
    document = cluster.read_pool(task.namespace, spec.pool_ref.name)
    if document is None or document["metadata"].get("deletionTimestamp"):
        message = f"SandboxPool {spec.pool_ref.name!r} not found in namespace {task.namespace}"
        _refuse(memo, task.namespace, task.name, "SandboxPoolNotFound", message, final=_past_deadline(body, spec))
        RECONCILES.labels(outcome="refused").inc()
        return
    try:
        pool = SandboxPool.model_validate(document)
    except ValidationError:
        message = f"SandboxPool {spec.pool_ref.name!r} is invalid (see its Ready condition)"
        _refuse(memo, task.namespace, task.name, "SandboxPoolInvalid", message, final=_past_deadline(body, spec))
        return
    template = pool.spec.template
    wider = widening(template, spec)
    if wider:
        _refuse(memo, task.namespace, task.name, "PolicyWidened", "; ".join(wider), final=True)
        RECONCILES.labels(outcome="invalid").inc()
        return
    ceiling = Claim(pool=pool.metadata.name, policy=template.policy())
    missing = cluster.missing_mcp_servers(task.namespace, spec.mcp_servers) if spec.mcp_servers else []
    if missing:
        message = f"MCPServer(s) not found in namespace {task.namespace}: {', '.join(missing)}"
        _refuse(memo, task.namespace, task.name, "MCPServerNotFound", message, final=_past_deadline(body, spec))
        return
    pod = claims.claimed_by(cluster, document, task)
    if pod is None:
        _started(memo, body)
        pod = claims.claim(cluster, document, template_hash(template), task, spec.timeout_seconds)
    if pod is not None:
        _claimed(memo, body, task, spec, ceiling, pod)
        return
    cluster.update_ledger(task.namespace, lambda entries: ledger.forget(entries, task.name, task.uid))
    if pool.spec.when_empty is WhenEmpty.WAIT:
        message = f"no idle sandbox in SandboxPool {pool.metadata.name!r}; waiting for one (whenEmpty: Wait)"
        final = _past_deadline(body, spec)
        _refuse(
            memo, task.namespace, task.name, "PoolEmpty", message, final=final, retry_seconds=POOL_WAIT_RETRY_SECONDS
        )
        return
    _run_cold(memo, body, task, pooled_spec(template, spec), ceiling)


def _claimed(
    memo: kopf.Memo, body: kopf.Body, task: manifests.TaskRef, spec: AgentTaskSpec, ceiling: Claim, pod: dict[str, Any]
) -> None:
    """Record the claim in the task's status (what the gateway trusts), and the task's own NetworkPolicy (it
    selects the pod by the task's labels, so the pod stays confined when the pool and its policy are gone)."""
    cluster: Cluster = memo.cluster
    cluster.ensure(manifests.network_policy(task, memo.settings), task.uid)
    meta = pod["metadata"]
    claim = ceiling.model_copy(update={"pod_name": meta["name"], "pod_uid": meta["uid"]})
    message = f"claimed sandbox {meta['name']} of SandboxPool {ceiling.pool}"
    observed = _accepted(body, spec, LaunchType.WARM, "SandboxClaimed", message) | {
        "podName": meta["name"],
        "startTime": now(),
        "claim": claim.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    _write(memo, task.namespace, task.name, observed)
    cluster.record_event(dict(body), "Claimed", message)
    observe_claim(body["metadata"]["creationTimestamp"], LaunchType.WARM.value)
    POOL_EVENTS.labels(event="claimed").inc()
    RECONCILES.labels(outcome="claimed").inc()


def sync_status(memo: kopf.Memo, namespace: str, task_name: str) -> None:
    """Fold the Job's and its pod's state into the task's status (only for the Job this task owns), or the state of
    the pool sandbox it claimed."""
    cluster: Cluster = memo.cluster
    task = cluster.read_task(namespace, task_name)
    if task is None:
        return
    claim = (task.get("status") or {}).get("claim") or {}
    if claim.get("podName"):
        pod = cluster.read_pod(namespace, claim["podName"])
        if pod is not None and pod["metadata"]["uid"] != claim.get("podUID"):
            pod = None
        observed = task_status.observe_sandbox(pod)
        if cluster.update_task_status(namespace, task_name, observed) is not None:
            STATUS_SYNCS.inc()
        return
    job, pods = cluster.job_and_pods(namespace, child_name(task_name))
    if job is None:
        return
    owners = {ref.get("uid") for ref in job["metadata"].get("ownerReferences") or []}
    if task["metadata"]["uid"] not in owners:
        return
    observed = task_status.observe(job, pods)
    if cluster.update_task_status(namespace, task_name, observed) is not None:
        STATUS_SYNCS.inc()


@kopf.on.event("batch", "v1", "jobs", labels=CHILD_LABELS)
def job_changed(body: kopf.Body, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    sync_status(memo, body["metadata"]["namespace"], body["metadata"]["labels"][TASK_LABEL])


@kopf.on.event("", "v1", "pods", labels=CHILD_LABELS)
def pod_changed(body: kopf.Body, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    sync_status(memo, body["metadata"]["namespace"], body["metadata"]["labels"][TASK_LABEL])


@kopf.on.event(*TASKS)
def count_phase(type: str | None, body: kopf.Body, **_: Any) -> None:
    phase = (body.get("status") or {}).get("phase") or Phase.PENDING.value
    TASK_PHASES.observe(body["metadata"]["uid"], None if type == "DELETED" else phase)


def _sweep(memo: kopf.Memo) -> None:
    """Resync unfinished tasks (a net for missed watch events); past a finished task's ttlSecondsAfterFinished,
    delete what it ran in (its Job and pods, ConfigMap, ServiceAccount, NetworkPolicy, a claimed sandbox), never
    the task: a GitOps controller would re-create it (docs/gitops.md)."""
    cluster: Cluster = memo.cluster
    for task in cluster.list_tasks():
        meta, status = task["metadata"], task.get("status") or {}
        phase = status.get("phase")
        if not (phase and Phase(phase).finished):
            if status.get("jobName") or (status.get("claim") or {}).get("podName"):
                sync_status(memo, meta["namespace"], meta["name"])
            continue
        ttl = (task.get("spec") or {}).get("ttlSecondsAfterFinished")
        finished_at = status.get("completionTime")
        if ttl is None or not finished_at or status.get("childrenDeletedAt"):
            continue
        if datetime.now(UTC) >= datetime.fromisoformat(finished_at.replace("Z", "+00:00")) + timedelta(seconds=ttl):
            cluster.delete_children(meta["namespace"], meta["name"])
            claimed = (status.get("claim") or {}).get("podName")
            if claimed:
                cluster.delete_pod(meta["namespace"], claimed)
            cluster.patch_task_status(meta["namespace"], meta["name"], {"childrenDeletedAt": now()})


def _sweep_pools(memo: kopf.Memo) -> None:
    """Reconcile every pool (a net for missed pod events: an idle pod that died unseen is replaced)."""
    for pool in memo.cluster.list_pools():
        _reconcile_pool(memo, pool["metadata"]["namespace"], pool["metadata"]["name"])


async def _sweeper(memo: kopf.Memo, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        for sweep in (lambda: _sweep(memo), lambda: _sweep_pools(memo), lambda: sessions.sweep(memo.cluster)):
            try:
                await asyncio.to_thread(sweep)
            except Exception:  # the next sweep tries again; one bad round (or kind) must not stop the others
                logger.exception("sweep failed")


def _reconcile_pool(memo: kopf.Memo, namespace: str, name: str) -> None:
    """One pool's reconcile at a time (pod events and the pool's own handlers race otherwise, and overshoot)."""
    with memo.pool_locks.setdefault((namespace, name), threading.Lock()):
        cluster: Cluster = memo.cluster
        document = cluster.read_pool(namespace, name)
        if document is None:
            POOL_SANDBOXES.observe(namespace, name, None)
            return
        pools.reconcile(cluster, memo.settings, document)


@kopf.on.resume(*POOLS, id="pool-resume")
@kopf.on.create(*POOLS, id="pool")
@kopf.on.update(*POOLS, id="pool-update", field="spec")
def pool_changed(name: str, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "SandboxPool is namespaced"
    _reconcile_pool(memo, namespace, name)


@kopf.on.event("", "v1", "pods", labels=POOL_POD_LABELS)
def pool_pod_changed(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    meta = body["metadata"]
    _reconcile_pool(memo, meta["namespace"], meta["labels"][POOL_LABEL])


@kopf.on.delete(*POOLS, id="pool-delete")
def pool_deleted(name: str, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    """Idle sandboxes go at once; the pool itself (its ServiceAccount, which its claimed sandboxes' tokens name)
    only when no claimed sandbox runs a task any more."""
    assert namespace is not None, "SandboxPool is namespaced"
    _reconcile_pool(memo, namespace, name)
    running = pools.claimed_running(memo.cluster, namespace, name)
    if running:
        raise kopf.TemporaryError(f"waiting for {running} claimed sandbox(es) to finish their tasks", delay=5)
    POOL_SANDBOXES.observe(namespace, name, None)


@kopf.on.resume(*SESSIONS, id="session-resume")
@kopf.on.create(*SESSIONS, id="session")
def session_created(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Claim the session's warm sandbox (controller/sessions.py); a session never falls back to a cold one."""
    sessions.reconcile(memo.cluster, memo.settings, dict(body))


@kopf.on.event("", "v1", "pods", labels=SESSION_POD_LABELS)
def session_pod_changed(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A session's sandbox exited or went away: the session ends at once, not at the next sweep."""
    meta = body["metadata"]
    document = memo.cluster.read_session(meta["namespace"], meta["labels"][SESSION_LABEL])
    if document is not None:
        sessions.check(memo.cluster, document)


@kopf.on.startup()
async def start_sweeper(memo: kopf.Memo, **_: Any) -> None:
    """An operator-level loop rather than a kopf timer: timers put finalizers on every task."""
    memo.sweeper = asyncio.create_task(_sweeper(memo, memo.settings.sweep_interval_seconds))


@kopf.on.cleanup()
async def stop_sweeper(memo: kopf.Memo, **_: Any) -> None:
    memo.sweeper.cancel()
