"""kopf registration: which events reach which reconcile (AgentTasks: tasks.py, SandboxPools: pools.py,
AgentSessions: sessions.py), the operator's start, and its periodic sweep.

kopf keeps its own bookkeeping in annotations, so the status subresource holds only what the CRD declares.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from typing import Any

import kopf
from prometheus_client import start_http_server

from controller import pools, reported, runs, sessions, tasks
from controller.diffbase import DigestedDiffBaseStorage
from controller.kube import EVENT_THREADS, SIDE_THREADS, Cluster, api_client
from controller.metrics import POOL_SANDBOXES, TASK_PHASES
from controller.serial import OneAtATime
from controller.settings import OperatorSettings
from mcpexec.api.agenttask import Phase
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
)
from mcpexec.api.status import AgentTaskStatus

TASKS = (GROUP, VERSION, AGENTTASK_PLURAL)
POOLS = (GROUP, VERSION, SANDBOXPOOL_PLURAL)
SESSIONS = (GROUP, VERSION, AGENTSESSION_PLURAL)
SESSION_POD_LABELS: dict[str, Any] = {**MANAGED_LABELS, SESSION_LABEL: kopf.PRESENT}
CHILD_LABELS: dict[str, Any] = {**MANAGED_LABELS, TASK_LABEL: kopf.PRESENT}
POOL_POD_LABELS: dict[str, Any] = {**MANAGED_LABELS, POOL_LABEL: kopf.PRESENT}
HANDLER_THREADS = 32
WORKERS_PER_KIND = 200
WORKER_IDLE_SECONDS = 0.5
logger = logging.getLogger(__name__)
_metrics_started: set[int] = set()


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = DigestedDiffBaseStorage(prefix=GROUP)
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = HANDLER_THREADS
    # At most this many objects of a kind in process at once, the rest left in the watch stream: unbounded, a burst of
    # 5,000 tasks (and their Jobs and pods) held every event's handler call at once, 2.2 GB. A worker that has
    # nothing more to do gives its place up soon, or the limit would cap throughput at limit/idle_timeout.
    settings.queueing.worker_limit = WORKERS_PER_KIND
    settings.queueing.idle_timeout = WORKER_IDLE_SECONDS
    memo.settings = OperatorSettings()
    elector = memo.get("elector")  # set by controller/__main__.py when replicas elect a leader
    connections = HANDLER_THREADS + SIDE_THREADS + EVENT_THREADS + 4  # one each, never a fresh TLS handshake
    memo.cluster = Cluster(api_client(connections, before_call=elector.check if elector else None))
    memo.pool_reconciles = OneAtATime()
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


@kopf.on.resume(*TASKS, id="reconcile-resume")
@kopf.on.create(*TASKS, id="reconcile")
def reconcile(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    tasks.reconcile(memo.cluster, memo.settings, dict(body))


def _keep(cluster: Cluster, kind: str, type: str | None, body: kopf.Body) -> None:
    """What a watch event brought, into the store the reconciles read (controller/store.py)."""
    if type == "DELETED":
        cluster.store.drop(kind, body["metadata"]["namespace"], body["metadata"]["name"])
    else:
        cluster.store.put(kind, body)


@kopf.on.event("batch", "v1", "jobs", labels=CHILD_LABELS)
def job_changed(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A Job's state as the event brings it, into the store its task's sync reads (a deleted one is looked for)."""
    _keep(memo.cluster, "Job", type, body)
    tasks.sync(memo.cluster, body["metadata"]["namespace"], body["metadata"]["labels"][TASK_LABEL])


@kopf.on.event("", "v1", "pods", labels=CHILD_LABELS)
def pod_changed(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _keep(memo.cluster, "Pod", type, body)
    tasks.sync(memo.cluster, body["metadata"]["namespace"], body["metadata"]["labels"][TASK_LABEL])


@kopf.on.event(*TASKS)
async def task_seen(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Every task event: into the store, its phase into the metrics (in the event loop: no thread for that), and a
    result its sandbox reported through the gateway folded in (controller/reported.py): it finishes now, not at its
    pod's exit."""
    _keep(memo.cluster, "AgentTask", type, body)
    document = dict(body)
    status = AgentTaskStatus.of(document)
    TASK_PHASES.observe(body["metadata"]["uid"], None if type == "DELETED" else (status.phase or Phase.PENDING).value)
    if type != "DELETED" and status.report is not None and not status.finished:
        await asyncio.to_thread(reported.fold, memo.cluster, document, memo.settings.report_grace_seconds)


@kopf.on.event(*POOLS)
async def pool_seen(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _keep(memo.cluster, "SandboxPool", type, body)


def _sweep_pools(memo: kopf.Memo) -> None:
    """Reconcile every pool (a net for missed pod events: an idle pod that died unseen is replaced)."""
    for pool in memo.cluster.list_pools():
        _reconcile_pool(memo, pool["metadata"]["namespace"], pool["metadata"]["name"])


async def _sweeper(interval: float, *sweeps: Callable[[], object]) -> None:
    while True:
        await asyncio.sleep(interval)
        for sweep in sweeps:
            try:
                await asyncio.to_thread(sweep)
            except Exception:  # the next sweep tries again; one bad round (or kind) must not stop the others
                logger.exception("sweep failed")


def _sweep_records(memo: kopf.Memo) -> None:
    deleted = runs.sweep(memo.cluster, memo.settings.run_record_retention_days)
    if deleted:
        logger.info("deleted %d run records past their retention", deleted)


def _reconcile_pool(memo: kopf.Memo, namespace: str, name: str) -> None:
    """One pool's reconcile at a time (pod events and the pool's own handlers race otherwise, and overshoot), bursts of
    its sandboxes' events folded into one (controller/serial.py); each reads the pool afresh."""

    def reconcile() -> None:
        cluster: Cluster = memo.cluster
        document = cluster.read_pool(namespace, name)
        if document is None:
            POOL_SANDBOXES.observe(namespace, name, None)
            return
        pools.reconcile(cluster, memo.settings, document)

    memo.pool_reconciles.run((namespace, name), reconcile)


@kopf.on.resume(*POOLS, id="pool-resume")
@kopf.on.create(*POOLS, id="pool")
@kopf.on.update(*POOLS, id="pool-update", field="spec")
def pool_changed(name: str, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "SandboxPool is namespaced"
    _reconcile_pool(memo, namespace, name)


@kopf.on.event("", "v1", "pods", labels=POOL_POD_LABELS)
def pool_pod_changed(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _keep(memo.cluster, "Pod", type, body)
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
def session_pod_changed(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """A session's sandbox exited or went away: the session ends at once, not at the next sweep."""
    _keep(memo.cluster, "Pod", type, body)
    meta = body["metadata"]
    document = memo.cluster.read_session(meta["namespace"], meta["labels"][SESSION_LABEL])
    if document is not None:
        sessions.check(memo.cluster, document)


@kopf.on.startup()
def migrate_ledgers(memo: kopf.Memo, **_: Any) -> None:
    """Before any task is reconciled: the legacy namespace-wide ledgers become run records (retried until done)."""
    made = runs.migrate(memo.cluster)
    if made:
        logger.info("made %d run records from legacy ledgers", made)


@kopf.on.startup()
async def start_sweepers(memo: kopf.Memo, **_: Any) -> None:
    """Operator-level loops rather than kopf timers: timers put finalizers on every task."""
    settings: OperatorSettings = memo.settings
    memo.sweepers = [
        asyncio.create_task(
            _sweeper(
                settings.sweep_interval_seconds,
                lambda: tasks.sweep(memo.cluster),
                lambda: _sweep_pools(memo),
                lambda: sessions.sweep(memo.cluster),
            )
        ),
        asyncio.create_task(_sweeper(settings.run_record_sweep_interval_seconds, lambda: _sweep_records(memo))),
    ]


@kopf.on.cleanup()
async def stop_sweepers(memo: kopf.Memo, **_: Any) -> None:
    for sweeper in memo.sweepers:
        sweeper.cancel()
