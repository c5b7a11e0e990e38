"""Cluster mode: a pod's projected ServiceAccount token -> TokenReview -> ServiceAccount -> its AgentTask.

The mapping functions are pure so the rules (audience, label, owner uid, finished tasks) are unit-tested
without an apiserver; `ClusterAuthenticator` wires them to `KubeDirectory`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any, NamedTuple

from kubernetes.client.exceptions import ApiException

from gateway.cluster.directory import KubeDirectory
from gateway.context import TaskContext
from gateway.errors import Unauthenticated
from mcpexec.api.agenttask import AgentTask, Phase
from mcpexec.api.meta import TASK_LABEL

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


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


def task_context(document: dict[str, Any], expected_uid: str, valid_until: float) -> TaskContext:
    """The caller's task, refused if it was re-created (uid differs) or has finished."""
    task = AgentTask.model_validate(document)
    if task.metadata.uid != expected_uid:
        raise Unauthenticated("AgentTask was re-created; token belongs to the old one")
    phase = (document.get("status") or {}).get("phase")
    if phase in {p.value for p in Phase if p.finished}:
        raise Unauthenticated("task has finished")
    return TaskContext(task=task, uid=expected_uid, expires_at=valid_until)


class ClusterAuthenticator:
    """Resolves tokens through the apiserver, caching each answer briefly to keep TokenReview off the hot path."""

    def __init__(self, directory: KubeDirectory, audience: str, cache_seconds: float = 30.0) -> None:
        self._directory = directory
        self._audience = audience
        self._cache_seconds = cache_seconds
        self._cache: dict[str, TaskContext] = {}

    async def authenticate(self, token: str) -> TaskContext:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        if cached is not None and not cached.expired:
            return cached
        context = await asyncio.to_thread(self._resolve, token)
        if len(self._cache) >= 4096:
            self._cache = {k: v for k, v in self._cache.items() if not v.expired}
        self._cache[key] = context
        return context

    def _resolve(self, token: str) -> TaskContext:
        try:
            account = service_account_from_review(self._directory.review_token(token, self._audience), self._audience)
            name, uid = task_of_service_account(self._directory.service_account(*account))
            document = self._directory.agent_task(account.namespace, name)
        except ApiException as exc:
            raise Unauthenticated(f"cannot resolve the token's task (apiserver answered {exc.status})") from None
        return task_context(document, uid, time.time() + self._cache_seconds)
