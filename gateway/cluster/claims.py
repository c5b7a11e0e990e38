"""Which task (or session) each SandboxPool sandbox serves: the AgentTasks' (or AgentSessions') `status.claim`,
listed once, then watched; one index per kind.

The claim is the task's status, which only the operator writes (the status subresource): it is the one authority
for "pod X serves task t". The index answers from memory which task (if any) claims a pod, so an idle sandbox's
refusals cost no API call, and a sandbox waiting for its assignment is answered as soon as the watch delivers the
claim (asyncio events: a waiter holds no thread). Only live claims are kept: a finished task's pod serves nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, NamedTuple

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from gateway.cluster.directory import KubeDirectory
from mcpexec.api.agentsession import SessionPhase
from mcpexec.api.agenttask import Phase
from mcpexec.api.meta import AGENTTASK_PLURAL
from mcpexec.api.sandboxpool import Claim

log = logging.getLogger("mcpexec.gateway.claims")
# Short watches, as for MCPServers: a blocked thread would hold up the gateway's shutdown until it returns.
WATCH_SECONDS = 5
RETRY_FIRST_SECONDS, RETRY_CEILING_SECONDS = 0.5, 10.0
FINISHED = frozenset(p.value for p in Phase if p.finished) | {SessionPhase.ENDED.value}


class ClaimEntry(NamedTuple):
    """A live claim: the task (namespace, name, uid) that pod `pod_uid` (`pod_name`, of `pool`) serves."""

    namespace: str
    name: str
    task_uid: str
    pool: str
    pod_name: str
    pod_uid: str


def claim_of(document: dict[str, Any]) -> ClaimEntry | None:
    """The live claim on a pod a task's document records: None without one, without a pod (a pooled task that ran
    cold), once the task has finished, or when the claim is malformed (logged: the operator writes it, so a bad
    one is a bug, and serves no sandbox)."""
    status = document.get("status") or {}
    raw = status.get("claim")
    if not raw or status.get("phase") in FINISHED:
        return None
    metadata = document.get("metadata") or {}
    try:
        claim = Claim.model_validate(raw)
    except ValidationError as exc:
        log.warning("ignoring a malformed status.claim", extra={"metadata": metadata, "error": str(exc)[:500]})
        return None
    namespace, name, uid = metadata.get("namespace"), metadata.get("name"), metadata.get("uid")
    if not (namespace and name and uid and claim.pod_name and claim.pod_uid):
        return None
    return ClaimEntry(str(namespace), str(name), str(uid), claim.pool, claim.pod_name, claim.pod_uid)


class ClaimIndex:
    """Live claims by task and by (namespace, pod uid). Mutated on the event loop only (the watch thread hands its
    events over with `call_soon_threadsafe`), so it needs no lock."""

    def __init__(self, directory: KubeDirectory, plural: str = AGENTTASK_PLURAL) -> None:
        """`plural`: the claimants it follows, AgentTasks or AgentSessions."""
        self._directory = directory
        self.plural = plural
        self._by_task: dict[tuple[str, str], ClaimEntry] = {}
        self._by_pod: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._waiters: dict[tuple[str, str], set[asyncio.Event]] = {}
        self._resource_version = ""

    @property
    def resource_version(self) -> str:
        """Where the index's view of its claimants stands (a watch resumes from it)."""
        return self._resource_version

    def lookup(self, namespace: str, pod_uid: str) -> ClaimEntry | None:
        """The task that claims this pod in this namespace. Two live claims on one pod (the operator never writes
        them) serve neither: fail closed."""
        tasks = self._by_pod.get((namespace, pod_uid))
        if not tasks:
            return None
        if len(tasks) > 1:
            log.warning("a pod is claimed by more than one task", extra={"namespace": namespace, "pod_uid": pod_uid})
            return None
        return self._by_task[next(iter(tasks))]

    def apply(self, kind: str, document: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED, BOOKMARK)."""
        metadata = document.get("metadata") or {}
        if metadata.get("resourceVersion"):
            self._resource_version = str(metadata["resourceVersion"])
        if kind == "BOOKMARK":
            return
        task = (str(metadata.get("namespace", "")), str(metadata.get("name", "")))
        self._forget(task)
        entry = None if kind == "DELETED" else claim_of(document)
        if entry is not None:
            self._remember(task, entry)

    def replace(self, documents: list[dict[str, Any]], resource_version: str) -> None:
        """A fresh list: the index becomes exactly what it says."""
        for task in list(self._by_task):
            self._forget(task)
        for document in documents:
            self.apply("ADDED", document)
        self._resource_version = resource_version

    def _forget(self, task: tuple[str, str]) -> None:
        entry = self._by_task.pop(task, None)
        if entry is None:
            return
        pod = (entry.namespace, entry.pod_uid)
        tasks = self._by_pod.get(pod, set())
        tasks.discard(task)
        if not tasks:
            self._by_pod.pop(pod, None)

    def _remember(self, task: tuple[str, str], entry: ClaimEntry) -> None:
        self._by_task[task] = entry
        pod = (entry.namespace, entry.pod_uid)
        self._by_pod.setdefault(pod, set()).add(task)
        for event in self._waiters.get(pod, ()):
            event.set()

    async def wait(self, namespace: str, pod_uid: str, seconds: float) -> ClaimEntry | None:
        """The pod's claim, waiting up to `seconds` for the watch to bring it (None: none came)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        pod = (namespace, pod_uid)
        while (found := self.lookup(namespace, pod_uid)) is None and (remaining := deadline - loop.time()) > 0:
            event = asyncio.Event()
            self._waiters.setdefault(pod, set()).add(event)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
            finally:
                waiting = self._waiters.get(pod, set())
                waiting.discard(event)
                if not waiting:
                    self._waiters.pop(pod, None)
        return found

    async def load(self) -> None:
        """List every claimant (at start, and whenever the watch's resourceVersion has expired)."""
        items, resource_version = await asyncio.to_thread(self._directory.listing, self.plural)
        self.replace(items, resource_version)

    async def follow(self) -> None:
        """Watch forever: resume from the last resourceVersion seen, list again when it has expired (410), back off
        while the API server is away (the index keeps answering from what it has)."""
        loop = asyncio.get_running_loop()

        def hand_over(kind: str, document: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(self.apply, kind, document)

        backoff = RETRY_FIRST_SECONDS
        while True:
            try:
                if not self._resource_version:
                    await self.load()
                # Events reach the loop before this call returns (FIFO), so the resourceVersion is current after it.
                await asyncio.to_thread(
                    self._directory.watch, self.plural, self._resource_version, WATCH_SECONDS, hand_over
                )
                backoff = RETRY_FIRST_SECONDS
            except ApiException as exc:
                if exc.status == 410:
                    log.info("claimant watch expired; listing again", extra={"plural": self.plural})
                    self._resource_version = ""
                    continue
                backoff = await self._back_off(exc, backoff)
            except Exception as exc:  # the connection broke, the API server is away: resume from where it was
                backoff = await self._back_off(exc, backoff)

    async def _back_off(self, exc: Exception, backoff: float) -> float:
        error = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("watching claims failed", extra={"plural": self.plural, "error": error})
        await asyncio.sleep(backoff)
        return min(backoff * 2, RETRY_CEILING_SECONDS)
