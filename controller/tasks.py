"""AgentTask reconcile: a task -> its objects (a Job of its own, or a claimed pool sandbox), Job and pod state -> its
status, and the periodic sweep; what a phase change means (an Event, metrics, the run's outcome in its name's
record) in one place.

Reconciles are idempotent and restart-safe: the launch decision (the name's run record, controller/runs.py) is taken
before anything is launched, objects have deterministic names and are created or found, a task that took its name
already adopts what an earlier reconcile launched (controller/leftovers.py), and a task whose status names its Job or
sandbox is never launched again. An operator killed at any point and started again finishes the work without running
a task twice.
"""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from controller import claims, ledger, leftovers, manifests, runs
from controller.kube import Cluster, StatusUpdate
from controller.launch_span import launch_span
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
from controller.pools import made
from controller.serial import OneAtATime
from controller.settings import OperatorSettings
from controller.status import merge, observe, observe_sandbox
from mcpexec import tracing
from mcpexec.api import egress
from mcpexec.api.agenttask import AgentTaskSpec, Phase
from mcpexec.api.conditions import ConditionType, condition, find
from mcpexec.api.meta import validation_message
from mcpexec.api.reasons import EventReason, Reason
from mcpexec.api.sandboxpool import Claim, LaunchType, SandboxPool, WhenEmpty, pooled_spec, template_hash, widening
from mcpexec.api.status import AgentTaskStatus
from mcpexec.api.timestamps import now, parse_time
from mcpexec.tracing import task_attributes, trace_id_of, traceparent_of

PREREQUISITE_RETRY_SECONDS = 5
# A task waiting for a pool's idle sandbox (whenEmpty: Wait) looks again this often.
POOL_WAIT_RETRY_SECONDS = 1
# One sync of a task at a time (its Job's and its pods' events come in parallel): no conflicts among them.
_SYNCS = OneAtATime()
log = logging.getLogger(__name__)


def write_status(
    cluster: Cluster, namespace: str, name: str, observed: AgentTaskStatus, known: dict[str, Any] | None = None
) -> AgentTaskStatus | None:
    """Merge what was observed into the task's status (controller/status.py: merge), then say what its phase change
    means. None when the task is gone. `known`: the task as just read (controller/kube.py: update_task_status)."""
    update = cluster.update_task_status(
        namespace, name, lambda current, generation: merge(current, observed, generation), known
    )
    if update is None:
        return None
    # A new task's status already reads Pending (the CRD's default): its first write is an event too.
    if update.written and (update.after.phase != update.before.phase or not update.before.observed_generation):
        _record_phase(cluster, update)
        if update.after.finished and update.after.phase != update.before.phase:
            _record_outcome(cluster, update)
    return update.after


def _record_phase(cluster: Cluster, update: StatusUpdate[AgentTaskStatus]) -> None:
    """A Kubernetes Event per phase change, so `kubectl describe` tells the task's story."""
    status = update.after
    phase = status.phase or Phase.PENDING
    conditions = status.conditions or []
    latest = find(conditions, ConditionType.FINISHED) or find(conditions, ConditionType.ACCEPTED)
    message = (latest.message if latest else "") or f"task is {phase.value}"
    cluster.record_event(update.document, phase.value, message, warning=phase in (Phase.FAILED, Phase.TIMED_OUT))
    if status.traceparent is not None:  # the change, in the task's trace
        with tracing.span(
            "operator.phase", task_attributes(update.document["metadata"]), parent=status.traceparent
        ) as span:
            span.set_attribute("mcpexec.phase", phase.value)
    if phase is Phase.RUNNING:
        observe_start(update.document["metadata"]["creationTimestamp"], (status.launch_type or LaunchType.COLD).value)


def _record_outcome(cluster: Cluster, update: StatusUpdate[AgentTaskStatus]) -> None:
    """A launched run's outcome into its name's record (controller/runs.py); a task finished without launching
    (refused, or its name ran) has no record of its own."""
    if not leftovers.launched(update.after):
        return
    finished = find(update.after.conditions or [], ConditionType.FINISHED)
    try:
        runs.finish(cluster, update.document, update.after.phase or Phase.FAILED, finished.reason if finished else "")
    except ApiException as exc:  # the record taken at the start already keeps the name from running again
        meta = update.document["metadata"]
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


def _cannot_run(
    cluster: Cluster,
    document: dict[str, Any],
    spec: AgentTaskSpec,
    reason: Reason,
    message: str,
    final: bool = False,
    outcome: str = "refused",
) -> None:
    """A refusal (waited for until the task's deadline, unless `final`), unless the name already ran: a task that is
    not run is told that first, as it would be with everything it needs there."""
    meta = document["metadata"]
    looked = runs.look(cluster, document)
    if isinstance(looked, ledger.Refusal):
        _ran_before(cluster, document, looked)
        return
    RECONCILES.labels(outcome=outcome).inc()
    _refuse(cluster, meta["namespace"], meta["name"], reason, message, final or _past_deadline(document, spec))


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
    sandbox started (a Job of its own, or a claimed pool sandbox). Restart-safe at every step: the launch decision
    (the name's run record) is taken before anything is launched, and a task that took it already adopts what it
    launched (controller/leftovers.py); a task whose status names its Job or sandbox is never launched again. Its
    syncs (its Job's and pod's events) wait until it is done."""
    meta = document["metadata"]
    _SYNCS.exclusive((meta["namespace"], meta["name"]), lambda: _reconcile(cluster, settings, document))


def _reconcile(cluster: Cluster, settings: OperatorSettings, document: dict[str, Any]) -> None:
    meta = document["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    status = AgentTaskStatus.of(document)
    if status.finished:
        return
    with RECONCILE_SECONDS.time():
        try:
            spec = AgentTaskSpec.model_validate(dict(document["spec"]))
        except ValidationError as exc:
            RECONCILES.labels(outcome="invalid").inc()
            message = validation_message(exc)
            _refuse(cluster, namespace, name, Reason.INVALID_SPEC, message, final=True)
            return
        if leftovers.launched(status):
            sync(cluster, namespace, name)  # an operator restart: what it runs in is the task's state now
            RECONCILES.labels(outcome="resumed").inc()
            return
        wider = egress.widening(spec.egress, settings.egress.bounds(namespace))
        if wider:
            _cannot_run(cluster, document, spec, Reason.POLICY_WIDENED, "; ".join(wider), final=True, outcome="invalid")
            return
        with launch_span(meta) as span:
            task = manifests.TaskRef(name=name, namespace=namespace, uid=meta["uid"], traceparent=traceparent_of(span))
            _launch(cluster, settings, document, task, spec)


def _launch(
    cluster: Cluster, settings: OperatorSettings, document: dict[str, Any], task: manifests.TaskRef, spec: AgentTaskSpec
) -> None:
    try:
        if spec.pool_ref is None:
            _run_cold(cluster, settings, document, task, spec)
        else:
            _run_pooled(cluster, settings, document, task, spec)
    except kopf.TemporaryError:
        RECONCILES.labels(outcome="waiting").inc()
        raise
    except Exception as exc:
        RECONCILE_ERRORS.labels(error=type(exc).__name__).inc()
        raise


def _ran_before(cluster: Cluster, document: dict[str, Any], refused: ledger.Refusal) -> None:
    """A task whose name already ran here (and that does not ask to run again) is finished without running
    (controller/ledger.py)."""
    meta = document["metadata"]
    conditions = [
        condition(ConditionType.ACCEPTED, False, refused.reason, refused.message),
        condition(ConditionType.FINISHED, True, refused.reason, refused.message),
    ]
    observed = AgentTaskStatus(phase=refused.phase, completion_time=now(), conditions=conditions)
    write_status(cluster, meta["namespace"], meta["name"], observed)
    RECONCILES.labels(outcome="already-ran").inc()


def _take(cluster: Cluster, document: dict[str, Any]) -> runs.Taken | None:
    """The launch decision (controller/runs.py: take); None when the task is not to launch: its name ran (it is
    finished so), or an earlier reconcile of it took the name and launched after all."""
    decided = runs.take(cluster, document)
    if isinstance(decided, ledger.Refusal):
        _ran_before(cluster, document, decided)
        return None
    if decided.resumed and _launched_since(cluster, document):
        return None
    return decided


def _launched_since(cluster: Cluster, document: dict[str, Any]) -> bool:
    """Whether the task, read afresh, finished or names its launch (the document this reconcile was given may
    predate that write): then nothing is launched, what it runs in is synced. A task gone has nothing to launch."""
    meta = document["metadata"]
    current = cluster.read_task(meta["namespace"], meta["name"])
    if current is None or current["metadata"]["uid"] != meta["uid"]:
        return True
    status = AgentTaskStatus.of(current)
    if status.finished or leftovers.launched(status):
        sync(cluster, meta["namespace"], meta["name"])
        return True
    return False


def _accepted(
    document: dict[str, Any],
    spec: AgentTaskSpec,
    launch: LaunchType,
    reason: Reason,
    message: str,
    task: manifests.TaskRef | None = None,
) -> AgentTaskStatus:
    """`task`: what was launched, with its trace (kept in the status: the gateway hands a claimed sandbox its trace
    from there, and people find the task's trace by its id)."""
    traceparent = None if task is None else task.traceparent
    return AgentTaskStatus(
        phase=Phase.PENDING,
        mode=spec.mode,
        launch_type=launch,
        observed_generation=document["metadata"].get("generation", 1),
        conditions=[condition(ConditionType.ACCEPTED, True, reason, message)],
        trace_id=trace_id_of(traceparent),
        traceparent=traceparent,
    )


def _run_cold(
    cluster: Cluster,
    settings: OperatorSettings,
    document: dict[str, Any],
    task: manifests.TaskRef,
    spec: AgentTaskSpec,
    claim: Claim | None = None,
    taken: runs.Taken | None = None,
) -> None:
    """A Job of the task's own (a pooled task's has the pool's sandbox, and its claim is written first: the gateway
    bounds the task by the pool's policy before its code can start). Its objects are created or found (an earlier
    reconcile of the task made them), never made twice; `taken`: the name, when the caller took it already."""
    missing = _missing_prerequisite(cluster, task.namespace, spec)
    if missing is not None:
        # Waited for (GitOps may apply them after the task) until the task's own deadline.
        _cannot_run(cluster, document, spec, *missing)
        return
    if taken is None and _take(cluster, document) is None:
        return
    if claim is not None:
        write_status(cluster, task.namespace, task.name, AgentTaskStatus(claim=claim), known=document)
    if spec.skills is not None:
        cluster.ensure(manifests.skills_claim(task.namespace, spec.skills), owner_uid=None)
    # The Job last: its pod needs its ServiceAccount and config, and is confined by its NetworkPolicy from the start.
    confined = [
        manifests.service_account(task),
        manifests.task_config(task, spec),
        manifests.network_policy(task, settings),
    ]
    cluster.ensure_all(confined, task.uid)
    cluster.ensure(manifests.job(task, spec, settings), task.uid)
    observed = _accepted(document, spec, LaunchType.COLD, Reason.JOB_CREATED, "sandboxed Job created", task)
    observed.job_name = child_name(task.name)
    write_status(cluster, task.namespace, task.name, observed, known=None if claim else document)
    observe_claim(document["metadata"]["creationTimestamp"], LaunchType.COLD.value)
    RECONCILES.labels(outcome="created").inc()


def _run_pooled(
    cluster: Cluster, settings: OperatorSettings, document: dict[str, Any], task: manifests.TaskRef, spec: AgentTaskSpec
) -> None:
    """Claim an idle sandbox of the task's pool; none ready: a cold Job, or wait, as the pool says. The name is
    taken before either launch; a task that waits gives it back (nothing launched), or takes none when no sandbox
    was there to try."""
    assert spec.pool_ref is not None
    pool_document = cluster.pool(task.namespace, spec.pool_ref.name)
    if pool_document is None or pool_document["metadata"].get("deletionTimestamp"):
        message = f"SandboxPool {spec.pool_ref.name!r} not found in namespace {task.namespace}"
        _cannot_run(cluster, document, spec, Reason.SANDBOX_POOL_NOT_FOUND, message)
        return
    try:
        pool = SandboxPool.model_validate(pool_document)
    except ValidationError:
        message = f"SandboxPool {spec.pool_ref.name!r} is invalid (see its Ready condition)"
        _cannot_run(cluster, document, spec, Reason.SANDBOX_POOL_INVALID, message)
        return
    template = pool.spec.template
    wider = widening(template, spec)
    if wider:
        _cannot_run(cluster, document, spec, Reason.POLICY_WIDENED, "; ".join(wider), final=True, outcome="invalid")
        return
    ceiling = Claim(pool=pool.metadata.name, policy=template.policy())
    missing = cluster.missing_mcp_servers(task.namespace, spec.mcp_servers) if spec.mcp_servers else []
    if missing:
        message = f"MCPServer(s) not found in namespace {task.namespace}: {', '.join(missing)}"
        _cannot_run(cluster, document, spec, Reason.MCP_SERVER_NOT_FOUND, message)
        return
    cold = pooled_spec(template, spec)
    current = template_hash(template)
    idle = claims.candidates(cluster, pool_document, current)
    waits = pool.spec.when_empty is WhenEmpty.WAIT
    taken: runs.Taken | None
    if waits and not idle:  # nothing to launch now: the name is looked at, not taken (it may have been, earlier)
        looked = runs.look(cluster, document)
        if isinstance(looked, ledger.Refusal):
            _ran_before(cluster, document, looked)
            return
        if looked is not None and _launched_since(cluster, document):
            return
        taken = looked
    elif (taken := _take(cluster, document)) is None:
        return
    if taken is not None and taken.resumed:
        found = _resume(cluster, task, pool_document)
        if found.job:
            _run_cold(cluster, settings, document, task, cold, ceiling, taken)
            return
        if found.pod is not None:
            _claimed(cluster, settings, document, task, spec, ceiling, found.pod)
            return
    # The task's own NetworkPolicy while the claim is made (it selects nothing until the claim labels a pod).
    confining = cluster.ensure_soon(manifests.network_policy(task, settings), task.uid) if idle else None
    pod = claims.claim_first(cluster, pool_document, current, idle, task, spec.timeout_seconds) if idle else None
    if confining is not None:
        confining.result()
    if pod is not None:
        _claimed(cluster, settings, document, task, spec, ceiling, pod)
        return
    if not waits:
        _run_cold(cluster, settings, document, task, cold, ceiling, taken)
        return
    if taken is not None:
        runs.withdraw(cluster, taken)
    message = f"no idle sandbox in SandboxPool {pool.metadata.name!r}; waiting for one (whenEmpty: Wait)"
    _refuse(
        cluster,
        task.namespace,
        task.name,
        Reason.POOL_EMPTY,
        message,
        final=_past_deadline(document, spec),
        retry_seconds=POOL_WAIT_RETRY_SECONDS,
    )


def _resume(cluster: Cluster, task: manifests.TaskRef, pool: dict[str, Any]) -> leftovers.Resume:
    """What an earlier reconcile of this task left (it took the name, then stopped before its status named what it
    launched): its Job, or a claimed sandbox to adopt; the sandboxes claimed for it that it does not keep are
    deleted."""
    found = leftovers.resume(
        task.uid,
        cluster.read_job(task.namespace, child_name(task.name)),
        claims.claimed_for(cluster, pool, task),
        made(pool),
    )
    for pod in found.release:
        cluster.delete_pod(task.namespace, pod["metadata"]["name"])
        POOL_EVENTS.labels(event="released").inc()
    return found


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
    waited = claims.waited(document)
    claim = ceiling.model_copy(update={"pod_name": meta["name"], "pod_uid": meta["uid"], "claim_seconds": waited})
    message = f"claimed sandbox {meta['name']} of SandboxPool {ceiling.pool}"
    observed = _accepted(document, spec, LaunchType.WARM, Reason.SANDBOX_CLAIMED, message, task)
    observed.pod_name, observed.start_time, observed.claim = meta["name"], now(), claim
    # Only a ready sandbox is claimed: its runtime is up, so the task runs from its first status (one write less).
    if observe_sandbox(pod).phase is Phase.RUNNING:
        observed.phase = Phase.RUNNING
    write_status(cluster, task.namespace, task.name, observed, known=document)
    cluster.record_event(document, EventReason.CLAIMED, message)
    observe_claim(document["metadata"]["creationTimestamp"], LaunchType.WARM.value)
    POOL_EVENTS.labels(event="claimed").inc()
    RECONCILES.labels(outcome="claimed").inc()


def sync(cluster: Cluster, namespace: str, name: str) -> None:
    """Fold the Job's and its pod's state into the task's status (only for the Job this task owns), or the state of
    the pool sandbox it claimed, as last seen (controller/store.py); one at a time, bursts folded into one
    (controller/serial.py)."""
    _SYNCS.run((namespace, name), lambda: _sync(cluster, namespace, name))


def sync_soon(cluster: Cluster, namespace: str, name: str, executor: Executor) -> None:
    """sync() on one of `executor`'s threads (a watch event's: nobody waits for it), folded before it takes one."""
    _SYNCS.soon((namespace, name), lambda: _sync(cluster, namespace, name), executor)


def _sync(cluster: Cluster, namespace: str, name: str) -> None:
    task = cluster.task(namespace, name)
    if task is None:
        return
    status = AgentTaskStatus.of(task)
    claim = status.claim
    if claim is not None and claim.pod_name:
        pod = cluster.pod(namespace, claim.pod_name)
        if pod is not None and pod["metadata"]["uid"] != claim.pod_uid:
            pod = None
        if write_status(cluster, namespace, name, observe_sandbox(pod), known=task) is not None:
            STATUS_SYNCS.inc()
        return
    # A Job that no status names yet (its reconcile may have stopped before saying so) only as seen: a warm task's
    # sandbox brings events before its claim is written, and it has no Job to read.
    job_name = child_name(name)
    named = leftovers.launched(status)
    job = cluster.job(namespace, job_name) if named else cluster.store.get("Job", namespace, job_name)
    if job is None:
        return
    owners = {ref.get("uid") for ref in job["metadata"].get("ownerReferences") or []}
    if task["metadata"]["uid"] not in owners:
        return
    counts = job.get("status") or {}
    started = any(counts.get(key) for key in ("active", "succeeded", "failed", "conditions"))
    pods = cluster.job_pods(namespace, job_name) if started else []  # none before it counts one
    observed = observe(job, pods)
    if status.launch_type is None:  # the reconcile that created the Job stopped before saying so
        spec = AgentTaskSpec.model_validate(dict(task["spec"]))
        accepted = _accepted(task, spec, LaunchType.COLD, Reason.JOB_CREATED, "sandboxed Job created")
        observed.mode, observed.launch_type = accepted.mode, accepted.launch_type
        observed.conditions = [*(accepted.conditions or []), *(observed.conditions or [])]
    if write_status(cluster, namespace, name, observed, known=task) is not None:
        STATUS_SYNCS.inc()


def sweep(cluster: Cluster) -> None:
    """Resync unfinished tasks (a net for missed watch events); delete the claimed sandboxes no task's status names
    or will (controller/leftovers.py: strays); past a finished task's ttlSecondsAfterFinished, delete what it ran in
    (its Job and pods, ConfigMap, ServiceAccount, NetworkPolicy, a claimed sandbox), never the task: a GitOps
    controller would re-create it (docs/gitops.md)."""
    tasks = cluster.list_tasks()
    for pod in leftovers.strays(cluster.claimed_task_pods(), tasks):
        log.warning("deleting sandbox %s/%s: claimed, and no task runs in it", *_where(pod))
        cluster.delete_pod(*_where(pod))
        POOL_EVENTS.labels(event="released").inc()
    for task in tasks:
        meta, status = task["metadata"], AgentTaskStatus.of(task)
        claimed = status.claim.pod_name if status.claim else None
        if not status.finished:
            if leftovers.launched(status):
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


def _where(pod: dict[str, Any]) -> tuple[str, str]:
    return pod["metadata"]["namespace"], pod["metadata"]["name"]
