"""kopf handlers: AgentTask -> its objects, and Job/Pod state -> AgentTask status.

Reconciles are idempotent (deterministic names, create-or-find), so an operator killed at any point
and started again finishes the work without duplicates. kopf keeps its own bookkeeping in annotations,
so the status subresource holds only what the CRD declares.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
from prometheus_client import start_http_server
from pydantic import ValidationError

from controller import manifests
from controller import status as task_status
from controller.kube import Cluster, api_client
from controller.metrics import RECONCILE_ERRORS, RECONCILE_SECONDS, RECONCILES, STATUS_SYNCS, TASK_PHASES
from controller.naming import child_name
from controller.settings import OperatorSettings
from mcpexec.api.agenttask import AgentTaskSpec, Phase
from mcpexec.api.conditions import condition, now
from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, MANAGED_LABELS, TASK_LABEL, VERSION

TASKS = (GROUP, VERSION, AGENTTASK_PLURAL)
CHILD_LABELS: dict[str, Any] = {**MANAGED_LABELS, TASK_LABEL: kopf.PRESENT}
PREREQUISITE_RETRY_SECONDS = 5
HANDLER_THREADS = 16
logger = logging.getLogger(__name__)
_metrics_started: set[int] = set()


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = HANDLER_THREADS
    memo.settings = OperatorSettings()
    memo.cluster = Cluster(api_client(pool_size=HANDLER_THREADS + 4))
    port = memo.settings.metrics_port
    if port and port not in _metrics_started:
        start_http_server(port)
        _metrics_started.add(port)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """Service-account credentials in a pod, else $KUBECONFIG as it is now (not as it was at import)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


def _write(memo: kopf.Memo, namespace: str, name: str, observed: task_status.Status) -> None:
    memo.cluster.update_task_status(namespace, name, lambda current: task_status.merge(current, observed))


def _refuse(memo: kopf.Memo, namespace: str, name: str, reason: str, message: str, final: bool) -> None:
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
        raise kopf.TemporaryError(message, delay=PREREQUISITE_RETRY_SECONDS)


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
            message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            _refuse(memo, namespace, name, "InvalidSpec", message, final=True)
            return
        settings: OperatorSettings = memo.settings
        cluster: Cluster = memo.cluster
        try:
            missing = _missing_prerequisite(cluster, namespace, spec)
            if missing is not None:
                # Waited for (GitOps may apply them after the task) until the task's own deadline.
                _refuse(memo, namespace, name, *missing, final=_past_deadline(body, spec))
                RECONCILES.labels(outcome="refused").inc()
                return
            task = manifests.TaskRef(name=name, namespace=namespace, uid=uid)
            if spec.skills is not None:
                cluster.ensure(manifests.skills_claim(namespace, spec.skills), owner_uid=None)
            cluster.ensure(manifests.service_account(task), uid)
            cluster.ensure(manifests.task_config(task, spec), uid)
            cluster.ensure(manifests.network_policy(task, settings), uid)
            cluster.ensure(manifests.job(task, spec, settings), uid)
        except kopf.TemporaryError:
            RECONCILES.labels(outcome="waiting").inc()
            raise
        except Exception as exc:
            RECONCILE_ERRORS.labels(error=type(exc).__name__).inc()
            raise
        _write(
            memo,
            namespace,
            name,
            {
                "phase": Phase.PENDING.value,
                "mode": spec.mode,
                "jobName": child_name(name),
                "observedGeneration": body["metadata"].get("generation", 1),
                "conditions": [condition("Accepted", True, "JobCreated", "sandboxed Job created")],
            },
        )
        RECONCILES.labels(outcome="created").inc()


def sync_status(memo: kopf.Memo, namespace: str, task_name: str) -> None:
    """Fold the Job's and its pod's state into the task's status (only for the Job this task owns)."""
    cluster: Cluster = memo.cluster
    task = cluster.read_task(namespace, task_name)
    if task is None:
        return
    job, pods = cluster.job_and_pods(namespace, child_name(task_name))
    if job is None:
        return
    owners = {ref.get("uid") for ref in job["metadata"].get("ownerReferences") or []}
    if task["metadata"]["uid"] not in owners:
        return
    observed = task_status.observe(job, pods)
    if cluster.update_task_status(namespace, task_name, lambda cur: task_status.merge(cur, observed)) is not None:
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
    """Resync unfinished tasks (a net for missed watch events) and delete finished ones past their TTL."""
    cluster: Cluster = memo.cluster
    for task in cluster.list_tasks():
        meta, status = task["metadata"], task.get("status") or {}
        phase = status.get("phase")
        if not (phase and Phase(phase).finished):
            if status.get("jobName"):
                sync_status(memo, meta["namespace"], meta["name"])
            continue
        ttl = (task.get("spec") or {}).get("ttlSecondsAfterFinished")
        finished_at = status.get("completionTime")
        if ttl is None or not finished_at:
            continue
        if datetime.now(UTC) >= datetime.fromisoformat(finished_at.replace("Z", "+00:00")) + timedelta(seconds=ttl):
            cluster.delete_task(meta["namespace"], meta["name"])


async def _sweeper(memo: kopf.Memo, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        try:
            await asyncio.to_thread(_sweep, memo)
        except Exception:  # the next sweep tries again; one bad round must not stop the loop
            logger.exception("sweep failed")


@kopf.on.startup()
async def start_sweeper(memo: kopf.Memo, **_: Any) -> None:
    """An operator-level loop rather than a kopf timer: timers put finalizers on every task."""
    memo.sweeper = asyncio.create_task(_sweeper(memo, memo.settings.sweep_interval_seconds))


@kopf.on.cleanup()
async def stop_sweeper(memo: kopf.Memo, **_: Any) -> None:
    memo.sweeper.cancel()
