"""Cluster mode: a pod's projected ServiceAccount token -> TokenReview -> ServiceAccount -> its AgentTask.

A task's own sandbox runs as the task's ServiceAccount (`mcpexec.dev/task` label, owned by the task). A SandboxPool's
sandboxes share the pool's ServiceAccount (`mcpexec.dev/pool` label), so the pod is what names the task: the
TokenReview of a pod-bound token says which pod (name and uid), and the task is the one whose `status.claim` (the
operator's word, see claims.py) names that pod. An AgentSession claims a pool's sandbox the same way: that pod is then
served as the session (a pooled task of the session's policy, whose code comes from the execute API). An idle sandbox
has no task and may reach nothing.

The mapping functions are pure so the rules (audience, label, owner uid, finished tasks, the claim) are unit-tested
without an apiserver; `ClusterAuthenticator` wires them to `KubeDirectory` and the `ClaimIndex`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any, NamedTuple

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from gateway.cluster.claims import ClaimEntry, ClaimIndex
from gateway.cluster.directory import KubeDirectory
from gateway.context import TaskContext
from gateway.errors import Forbidden, SandboxNotClaimed, Unauthenticated
from mcpexec import tracing
from mcpexec.api.agentsession import AgentSession, SessionPhase, session_task
from mcpexec.api.agenttask import AgentTask, Phase
from mcpexec.api.meta import POOL_LABEL, TASK_LABEL
from mcpexec.api.sandboxpool import Claim

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
# What a TokenReview says of a token bound to a pod (the kubelet's projected tokens are).
POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"
POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid"
# How long a call from a pool's sandbox waits for its claim to reach this replica's index before it is refused:
# the operator's status write and this replica's watch race the sandbox's first call.
CLAIM_LAG_SECONDS = 2.0
_CACHE_MAX = 4096


class ServiceAccountRef(NamedTuple):
    namespace: str
    name: str


def service_account_from_review(status: dict[str, Any], audience: str) -> ServiceAccountRef:
    """The ServiceAccount a TokenReview vouches for; refuses unauthenticated or wrong-audience tokens."""
    if not status.get("authenticated"):
        raise Unauthenticated("token rejected by TokenReview")
    if audience not in (status.get("audiences") or []):
        raise Unauthenticated("token audience is not the gateway")
    username = str((status.get("user") or {}).get("username", ""))
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        raise Unauthenticated("token does not belong to a ServiceAccount")
    namespace, _, name = username.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
    if not namespace or not name:
        raise Unauthenticated("malformed ServiceAccount username")
    return ServiceAccountRef(namespace, name)


def task_of_service_account(service_account: dict[str, Any]) -> tuple[str, str]:
    """(task name, task uid) from the SA's `mcpexec.dev/task` label and its AgentTask owner reference."""
    metadata = service_account.get("metadata") or {}
    name = (metadata.get("labels") or {}).get(TASK_LABEL)
    if not name:
        raise Unauthenticated("ServiceAccount is not an mcpexec task's")
    for owner in metadata.get("ownerReferences") or []:
        if owner.get("kind") == "AgentTask" and owner.get("name") == name and owner.get("uid"):
            return str(name), str(owner["uid"])
    raise Unauthenticated("ServiceAccount is not owned by its AgentTask")


class TaskRef(NamedTuple):
    namespace: str
    name: str
    uid: str


class PoolSandbox(NamedTuple):
    """A SandboxPool's pod, as a TokenReview names it."""

    namespace: str
    pool: str
    pod_name: str
    pod_uid: str


def pool_service_account_name(pool: str) -> str:
    """The operator names a pool's children `mcpexec-pool-<pool>` (mcpexec/api/meta.py)."""
    return f"mcpexec-pool-{pool}"


def pool_of_service_account(service_account: dict[str, Any]) -> str | None:
    """The SandboxPool whose sandboxes run as this ServiceAccount (its `mcpexec.dev/pool` label, on the account the
    operator names for that pool); None for an account that is not a pool's (a task's, or none of mcpexec's)."""
    metadata = service_account.get("metadata") or {}
    labels = metadata.get("labels") or {}
    pool = labels.get(POOL_LABEL)
    if not pool or TASK_LABEL in labels:
        return None
    if metadata.get("name") != pool_service_account_name(str(pool)):
        raise Unauthenticated(f"ServiceAccount is labelled for pool {pool!r} but is not that pool's")
    return str(pool)


def _one(extra: dict[str, Any], key: str) -> str:
    values = extra.get(key)
    return str(values[0]) if isinstance(values, list) and len(values) == 1 and values[0] else ""


def pool_sandbox(status: dict[str, Any], account: ServiceAccountRef, pool: str) -> PoolSandbox:
    """The pod a pool's token is bound to. Every sandbox of a pool shares its ServiceAccount, so a token that names
    no pod names no sandbox: refused."""
    extra = (status.get("user") or {}).get("extra") or {}
    name, uid = _one(extra, POD_NAME_EXTRA), _one(extra, POD_UID_EXTRA)
    if not name or not uid:
        raise Unauthenticated(f"a token of pool {pool!r} must be bound to its pod (the TokenReview names none)")
    return PoolSandbox(account.namespace, pool, name, uid)


def _claim(document: dict[str, Any]) -> Claim | None:
    raw = (document.get("status") or {}).get("claim")
    if not raw:
        return None
    try:
        return Claim.model_validate(raw)
    except ValidationError:
        raise Unauthenticated("the task's status.claim is malformed") from None


def _traceparent(document: dict[str, Any]) -> str | None:
    """The operator's word on a task's or session's trace (the span that launched or claimed its sandbox)."""
    traceparent = (document.get("status") or {}).get("traceparent")
    return traceparent if isinstance(traceparent, str) and tracing.parse(traceparent) else None


def task_context(document: dict[str, Any], expected_uid: str, valid_until: float) -> TaskContext:
    """The caller's task, refused if it was re-created (uid differs) or has finished. A task of a SandboxPool
    (`spec.poolRef`) is bounded by the policy its claim recorded (its ceiling, warm or cold alike), and refused
    until the claim is there, or if its own servers go beyond it (the operator refuses such a task first)."""
    task = AgentTask.model_validate(document)
    if task.metadata.uid != expected_uid:
        raise Unauthenticated("AgentTask was re-created; token belongs to the old one")
    phase = (document.get("status") or {}).get("phase")
    if phase in {p.value for p in Phase if p.finished}:
        raise Unauthenticated("task has finished")
    claim = _claim(document)
    if task.spec.pool_ref is not None and (claim is None or claim.pool != task.spec.pool_ref.name):
        raise SandboxNotClaimed(f"the task's claim on pool {task.spec.pool_ref.name!r} is not recorded yet")
    traceparent = _traceparent(document)
    if claim is None:
        return TaskContext(task=task, uid=expected_uid, expires_at=valid_until, traceparent=traceparent)
    wider = [name for name in task.spec.mcp_servers if name not in claim.policy.mcp_servers]
    if wider:
        raise Forbidden(f"spec.mcpServers {wider} are not in the pool's template")
    return TaskContext(
        task=task, uid=expected_uid, expires_at=valid_until, ceiling=claim.policy, traceparent=traceparent
    )


def claimed_task_context(
    document: dict[str, Any], sandbox: PoolSandbox, expected_uid: str, valid_until: float
) -> TaskContext:
    """The task a pool's sandbox serves, read afresh: refused unless its `status.claim` names exactly this pod (uid,
    name, pool) in this namespace, and as `task_context` refuses."""
    context = task_context(document, expected_uid, valid_until)
    claim = _claim(document)
    if context.task.metadata.namespace != sandbox.namespace:
        raise SandboxNotClaimed("this sandbox's claim is another namespace's task")
    claimed = None if claim is None else (claim.pool, claim.pod_name, claim.pod_uid)
    if claimed != (sandbox.pool, sandbox.pod_name, sandbox.pod_uid):
        raise SandboxNotClaimed("the task's claim names another sandbox")
    return context


def claimed_session_context(
    document: dict[str, Any], sandbox: PoolSandbox, expected_uid: str, valid_until: float
) -> TaskContext:
    """The session a pool's sandbox serves, read afresh: refused unless it is the same session (uid), Ready, and its
    `status.claim` names exactly this pod (uid, name, pool) in this namespace; bounded by the claim's policy."""
    session = AgentSession.model_validate(document)
    if session.metadata.uid != expected_uid:
        raise Unauthenticated("AgentSession was re-created; the sandbox belongs to the old one")
    claim = _claim(document)
    if session.metadata.namespace != sandbox.namespace:
        raise SandboxNotClaimed("this sandbox's claim is another namespace's session")
    claimed = None if claim is None else (claim.pool, claim.pod_name, claim.pod_uid)
    if claimed != (sandbox.pool, sandbox.pod_name, sandbox.pod_uid):
        raise SandboxNotClaimed("the session's claim names another sandbox")
    return session_context(document, valid_until)


def session_context(document: dict[str, Any], valid_until: float) -> TaskContext:
    """A Ready AgentSession as the gateway serves it: a pooled task of the session's policy, bounded by the policy
    its claim recorded (refused if its servers go beyond it; the operator ends such a session first)."""
    claim = _claim(document)
    if (document.get("status") or {}).get("phase") != SessionPhase.READY.value or claim is None:
        raise Unauthenticated("the session is not Ready (it has ended, or its claim is not recorded yet)")
    task = session_task(document, claim.policy.mcp_servers, claim.policy.egress)
    wider = [name for name in task.spec.mcp_servers if name not in claim.policy.mcp_servers]
    if wider:
        raise Forbidden(f"spec.mcpServers {wider} are not in the pool's template")
    uid = str(document["metadata"]["uid"])
    return TaskContext(
        task=task,
        uid=uid,
        expires_at=valid_until,
        ceiling=claim.policy,
        session=True,
        traceparent=_traceparent(document),
    )


class ClusterAuthenticator:
    """Resolves tokens through the apiserver and the claim index, caching each success briefly to keep TokenReview
    off the hot path (a refusal is never cached: a sandbox claimed a moment later is served at once)."""

    def __init__(
        self,
        directory: KubeDirectory,
        audience: str,
        claims: ClaimIndex,
        cache_seconds: float = 30.0,
        claim_lag_seconds: float = CLAIM_LAG_SECONDS,
        sessions: ClaimIndex | None = None,
    ) -> None:
        """`claims`: the AgentTasks' claims; `sessions`: the AgentSessions' (None: this gateway serves none)."""
        self._directory = directory
        self._audience = audience
        self._claims = claims
        self._sessions = sessions
        self._cache_seconds = cache_seconds
        self._claim_lag_seconds = claim_lag_seconds
        self._cache: dict[str, TaskContext] = {}
        # A pool sandbox's identity (which pod), claimed or not: its polls and refusals need no TokenReview each.
        self._sandboxes: dict[str, tuple[PoolSandbox, float]] = {}

    async def authenticate(self, token: str) -> TaskContext:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        if cached is not None and not cached.expired:
            return cached
        caller = await self._identify(token, key)
        if isinstance(caller, PoolSandbox):
            context = await self._claimed(caller, self._claim_lag_seconds)
            if context is None:
                raise SandboxNotClaimed(
                    f"sandbox {caller.pod_name} of pool {caller.pool!r} is not claimed by a task: it may reach nothing"
                )
        else:
            context = await asyncio.to_thread(self._task_context, caller)
        if len(self._cache) >= _CACHE_MAX:
            self._cache = {k: v for k, v in self._cache.items() if not v.expired}
        self._cache[key] = context
        return context

    async def assignment(self, token: str, wait: float) -> TaskContext | None:
        caller = await self._identify(token, hashlib.sha256(token.encode()).hexdigest())
        if not isinstance(caller, PoolSandbox):
            raise Forbidden("only a SandboxPool's sandbox asks for an assignment: this token is a task's own")
        return await self._claimed(caller, wait)

    async def _identify(self, token: str, key: str) -> TaskRef | PoolSandbox:
        known = self._sandboxes.get(key)
        if known is not None and known[1] > time.time():
            return known[0]
        caller = await asyncio.to_thread(self._review, token)
        if isinstance(caller, PoolSandbox):
            now = time.time()
            if len(self._sandboxes) >= _CACHE_MAX:
                self._sandboxes = {k: v for k, v in self._sandboxes.items() if v[1] > now}
            self._sandboxes[key] = (caller, now + self._cache_seconds)
        return caller

    def _review(self, token: str) -> TaskRef | PoolSandbox:
        try:
            status = self._directory.review_token(token, self._audience)
            account = service_account_from_review(status, self._audience)
            service_account = self._directory.service_account(*account)
        except ApiException as exc:
            raise Unauthenticated(f"cannot resolve the token's task (apiserver answered {exc.status})") from None
        pool = pool_of_service_account(service_account)
        if pool is not None:
            return pool_sandbox(status, account, pool)
        name, uid = task_of_service_account(service_account)
        return TaskRef(account.namespace, name, uid)

    def _task_context(self, task: TaskRef) -> TaskContext:
        try:
            document = self._directory.agent_task(task.namespace, task.name)
        except ApiException as exc:
            raise Unauthenticated(f"cannot resolve the token's task (apiserver answered {exc.status})") from None
        return task_context(document, task.uid, time.time() + self._cache_seconds)

    async def _claimant(self, sandbox: PoolSandbox, wait: float) -> tuple[ClaimIndex, ClaimEntry] | None:
        """The index (tasks' or sessions') whose claim names the sandbox, waiting up to `wait` s for one. A pod
        claimed by both a task and a session (the operator never claims twice) serves neither: fail closed."""
        indexes = [index for index in (self._claims, self._sessions) if index is not None]
        waits = {
            asyncio.ensure_future(index.wait(sandbox.namespace, sandbox.pod_uid, wait)): index for index in indexes
        }
        found: tuple[ClaimIndex, ClaimEntry] | None = None
        try:
            pending = set(waits)
            while pending and found is None:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                found = next(((waits[f], entry) for f in done if (entry := f.result()) is not None), None)
        finally:
            for future in waits:
                future.cancel()
        if (
            found is not None
            and sum(index.lookup(sandbox.namespace, sandbox.pod_uid) is not None for index in indexes) > 1
        ):
            return None
        return found

    async def _claimed(self, sandbox: PoolSandbox, wait: float) -> TaskContext | None:
        """The task or session that claims the sandbox, once an index has its claim (None: none within `wait` s)."""
        found = await self._claimant(sandbox, wait)
        if found is None:
            return None
        index, entry = found
        session = index is self._sessions
        read = self._directory.agent_session if session else self._directory.agent_task
        try:
            document = await asyncio.to_thread(read, entry.namespace, entry.name)
        except ApiException as exc:
            raise Unauthenticated(f"cannot resolve the sandbox's claimant (apiserver answered {exc.status})") from None
        valid_until = time.time() + self._cache_seconds
        if session:
            return claimed_session_context(document, sandbox, entry.task_uid, valid_until)
        return claimed_task_context(document, sandbox, entry.task_uid, valid_until)
