"""kopf registration: which events reach which reconcile (AgentTasks: tasks.py, SandboxPools: pools.py,
AgentSessions: sessions.py), the operator's start, and its periodic sweep.

kopf keeps its own bookkeeping in annotations, so the status subresource holds only what the CRD declares.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException
from prometheus_client import start_http_server

from controller import leftovers, pools, reported, runs, sessions, tasks
from controller.diffbase import DigestedDiffBaseStorage
from controller.kube import EVENT_THREADS, SIDE_THREADS, WATCHED_API_VERSIONS, Cluster, api_client, namespace_going
from controller.metrics import POOL_SANDBOXES, TASK_PHASES
from controller.serial import OneAtATime
from controller.settings import OperatorSettings
from controller.starts import Starts
from controller.watches import Watch
from mcpexec import tracing
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
from mcpexec.api.status import AgentSessionStatus, AgentTaskStatus

TASKS = (GROUP, VERSION, AGENTTASK_PLURAL)
POOLS = (GROUP, VERSION, SANDBOXPOOL_PLURAL)
SESSIONS = (GROUP, VERSION, AGENTSESSION_PLURAL)
CHANGE_HANDLED = frozenset({"SandboxPool"})  # the kinds with kopf change handlers (create, update, delete)
HANDLER_THREADS = 32
START_THREADS = 16
WORKERS_PER_KIND = 200
WORKER_IDLE_SECONDS = 0.5
logger = logging.getLogger(__name__)
_metrics_started: set[int] = set()


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    tracing.configure("mcpexec-operator")  # on only with an OTLP endpoint in the environment
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = DigestedDiffBaseStorage(prefix=GROUP, changed_kinds=CHANGE_HANDLED)
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = HANDLER_THREADS
    # At most this many objects of a kind in process at once, the rest left in the watch stream: unbounded, a burst of
    # 5,000 tasks (and their Jobs and pods) held every event's handler call at once, 2.2 GB. A worker that has
    # nothing more to do gives its place up soon, or the limit would cap throughput at limit/idle_timeout.
    settings.queueing.worker_limit = WORKERS_PER_KIND
    settings.queueing.idle_timeout = WORKER_IDLE_SECONDS
    memo.settings = OperatorSettings()
    elector = memo.get("elector")  # set by controller/__main__.py when replicas elect a leader
    # One connection each, never a fresh TLS handshake.
    connections = 2 * HANDLER_THREADS + START_THREADS + SIDE_THREADS + EVENT_THREADS + len(WATCHED_API_VERSIONS) + 4
    memo.cluster = Cluster(api_client(connections, before_call=elector.check if elector else None))
    memo.pool_reconciles, memo.session_checks = OneAtATime(), OneAtATime()
    memo.starts = Starts(START_THREADS)
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


def _keep(cluster: Cluster, kind: str, type: str | None, body: Mapping[str, Any]) -> None:
    """What a watch event brought, into the store the reconciles read (controller/store.py)."""
    if type == "DELETED":
        meta = body["metadata"]
        cluster.store.drop(kind, meta["namespace"], meta["name"], meta.get("uid"))
    else:
        cluster.store.put(kind, body)


def _job_seen(memo: kopf.Memo, type: str, job: dict[str, Any]) -> None:
    """A Job's state as the event brings it, into the store its task's sync reads (a deleted one is looked for)."""
    _keep(memo.cluster, "Job", type, job)
    meta = job["metadata"]
    task = (meta.get("labels") or {}).get(TASK_LABEL)
    if task:
        tasks.sync_soon(memo.cluster, meta["namespace"], task, memo.work)


def _pod_seen(memo: kopf.Memo, type: str, pod: dict[str, Any]) -> None:
    """A pod of ours (a task's Job's, a pool's sandbox, a session's): into the store; then its task's sync, its pool's
    reconcile (a sandbox claimed, gone, ready: the pool refills), its session's check (a sandbox exited or went away:
    the session ends at once, not at the next sweep)."""
    _keep(memo.cluster, "Pod", type, pod)
    meta = pod["metadata"]
    namespace, labels = meta["namespace"], meta.get("labels") or {}
    if labels.get(TASK_LABEL):
        tasks.sync_soon(memo.cluster, namespace, labels[TASK_LABEL], memo.work)
    if labels.get(POOL_LABEL):
        memo.pool_reconciles.soon(
            (namespace, labels[POOL_LABEL]), _pool_work(memo, namespace, labels[POOL_LABEL]), memo.work
        )
    if labels.get(SESSION_LABEL):
        session = labels[SESSION_LABEL]
        memo.session_checks.soon((namespace, session), lambda: _check_session(memo, namespace, session), memo.work)


def _check_session(memo: kopf.Memo, namespace: str, name: str) -> None:
    document = memo.cluster.session(namespace, name)
    if document is not None:
        sessions.check(memo.cluster, document)


@kopf.on.startup()
def start_watches(memo: kopf.Memo, **_: Any) -> None:
    """The operator's own watches of its pods and Jobs (controller/watches.py), and the threads their work runs on."""
    memo.work = ThreadPoolExecutor(HANDLER_THREADS, thread_name_prefix="work")
    selector = ",".join(f"{key}={value}" for key, value in MANAGED_LABELS.items())
    memo.watches = [
        Watch(memo.cluster, "Pod", selector, lambda type, pod: _pod_seen(memo, type, pod)),
        Watch(memo.cluster, "Job", selector, lambda type, job: _job_seen(memo, type, job)),
    ]
    for watch in memo.watches:
        watch.start()


@kopf.on.event(*TASKS)
async def task_seen(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Every task event: into the store, its phase into the metrics (in the event loop: no thread for that); a task
    not launched yet is started (controller/starts.py); a result its sandbox reported through the gateway is folded
    in (controller/reported.py): it finishes now, not at its pod's exit."""
    _keep(memo.cluster, "AgentTask", type, body)
    meta = body["metadata"]
    document = dict(body)
    status = AgentTaskStatus.of(document)
    TASK_PHASES.observe(meta["uid"], None if type == "DELETED" else (status.phase or Phase.PENDING).value)
    if type == "DELETED" or status.finished:
        return
    namespace, name, uid = meta["namespace"], meta["name"], meta["uid"]
    if status.report is not None:
        await asyncio.to_thread(reported.fold, memo.cluster, document, memo.settings.report_grace_seconds)
    elif not leftovers.launched(status):
        memo.starts.want(uid, f"AgentTask {namespace}/{name}", lambda: _start_task(memo, namespace, name, uid))
    elif type is None:  # listed as the operator starts: what the task runs in is its state now
        await asyncio.to_thread(tasks.sync, memo.cluster, namespace, name)


def _start_task(memo: kopf.Memo, namespace: str, name: str, uid: str) -> None:
    document = memo.cluster.task(namespace, name)
    if document is not None and document["metadata"]["uid"] == uid:
        with _unless_namespace_going(namespace):
            tasks.reconcile(memo.cluster, memo.settings, document)


@kopf.on.event(*POOLS)
async def pool_seen(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _keep(memo.cluster, "SandboxPool", type, body)


def _sweep_pools(memo: kopf.Memo) -> None:
    """Reconcile every pool (a net for a reconcile that failed: the next pod event may be long in coming)."""
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
    its sandboxes' events folded into one (controller/serial.py)."""
    memo.pool_reconciles.run((namespace, name), _pool_work(memo, namespace, name))


def _pool_work(memo: kopf.Memo, namespace: str, name: str) -> Callable[[], None]:
    """A pool's reconcile, the pool read afresh when it runs."""

    def reconcile() -> None:
        cluster: Cluster = memo.cluster
        document = cluster.read_pool(namespace, name)
        if document is None:
            POOL_SANDBOXES.observe(namespace, name, None)
            return
        with _unless_namespace_going(namespace):
            pools.reconcile(cluster, memo.settings, document)

    return reconcile


@contextmanager
def _unless_namespace_going(namespace: str) -> Iterator[None]:
    """A reconcile in a namespace being deleted ends quietly: what it would make is refused, and what is there goes."""
    try:
        yield
    except ApiException as exc:
        if not namespace_going(exc):
            raise
        logger.info("namespace %s is being deleted; nothing to reconcile in it", namespace)


@kopf.on.resume(*POOLS, id="pool-resume")
@kopf.on.create(*POOLS, id="pool")
@kopf.on.update(*POOLS, id="pool-update", field="spec")
def pool_changed(name: str, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    assert namespace is not None, "SandboxPool is namespaced"
    _reconcile_pool(memo, namespace, name)


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


@kopf.on.event(*SESSIONS)
async def session_seen(type: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Every session event: into the store; a session not claimed yet is started (controller/starts.py: claim its
    warm sandbox, controller/sessions.py; a session never falls back to a cold one)."""
    _keep(memo.cluster, "AgentSession", type, body)
    meta = body["metadata"]
    if type != "DELETED" and sessions.to_claim(AgentSessionStatus.of(dict(body))):
        namespace, name, uid = meta["namespace"], meta["name"], meta["uid"]
        memo.starts.want(uid, f"AgentSession {namespace}/{name}", lambda: _start_session(memo, namespace, name, uid))


def _start_session(memo: kopf.Memo, namespace: str, name: str, uid: str) -> None:
    document = memo.cluster.session(namespace, name)
    if document is not None and document["metadata"]["uid"] == uid:
        with _unless_namespace_going(namespace):
            sessions.reconcile(memo.cluster, memo.settings, document)


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
    for watch in memo.watches:
        watch.stop()
    memo.starts.stop()
    memo.work.shutdown(wait=False, cancel_futures=True)
    tracing.flush()  # what is queued is exported now
