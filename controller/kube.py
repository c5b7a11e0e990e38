"""The operator's API calls: idempotent creates, reads, and conflict-safe writes (one read-modify-write loop, for
a task's status; run records are created, or written guarded by what was read, never read-modified-written). What a
write means (Events, metrics, a run's outcome) is the reconcilers' (controller/tasks.py), never this wrapper's."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar, cast

import kopf
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from controller.manifests import Manifest
from controller.naming import child_name
from controller.store import Store
from mcpexec.api.conditions import generation
from mcpexec.api.meta import (
    AGENTSESSION_PLURAL,
    AGENTTASK_PLURAL,
    CLAIMED,
    GROUP,
    MANAGED_LABELS,
    POOL_LABEL,
    SANDBOX_STATE_LABEL,
    SANDBOXPOOL_PLURAL,
    TASK_LABEL,
    VERSION,
)
from mcpexec.api.status import AgentSessionStatus, AgentTaskStatus, SandboxPoolStatus, Status

log = logging.getLogger(__name__)

_CONFLICT_RETRIES = 5
T = TypeVar("T")
S = TypeVar("S", bound=Status)
RUNTIME_CLASS_CACHE_SECONDS = 10.0
# An object ensure() created or found is not asked for again this long (a pool's ServiceAccount and NetworkPolicy
# were ensured on every one of its pods' events: four requests each time).
ENSURED_CACHE_SECONDS = 60.0
SIDE_THREADS = 16
EVENT_THREADS = 2
EVENT_REPEAT_SECONDS = 10.0
EVENT_BACKLOG = 1000  # Events waiting to be sent; more are dropped (client-go's recorder drops too)
LIST_PAGE = 500
WATCHED_API_VERSIONS = {"Pod": "v1", "Job": "batch/v1"}  # the kinds the operator watches itself (controller/watches.py)
WATCH_CONNECT_SECONDS = 10
WATCH_SLACK_SECONDS = 30  # a watch's read waits this much longer than the API server's own end of it
WATCH_CHUNK = 65536
JOB_NAME_LABEL = "job-name"  # set by the Job controller on a Job's pods


@dataclass(frozen=True)
class StatusUpdate(Generic[S]):
    """A status read-modify-write that went through: the resource (as written, or as read when there was nothing to
    change, `written` False), its status before, and its status now."""

    document: dict[str, Any]
    before: S
    after: S
    written: bool


def _parsed(response: Any) -> dict[str, Any]:
    """An answer as the API server's JSON (never the client's models: building those for a pod or a Job cost more CPU
    than the rest of a reconcile); items in a list lack apiVersion and kind, as the API server sends them."""
    try:
        data = response.data
    finally:
        response.release_conn()
    return cast(dict[str, Any], json.loads(data))


def namespace_going(exc: BaseException) -> bool:
    """Whether an API error says the namespace is being deleted: nothing may be made in it any more, and what is in
    it goes with it (a reconcile there has nothing left to do)."""
    return isinstance(exc, ApiException) and exc.status == 403 and "NamespaceTerminating" in str(exc.body or "")


def _pages(lister: Callable[..., Any], **params: Any) -> Iterator[dict[str, Any]]:
    """A list call's pages (LIST_PAGE items each), one snapshot: the continue token keeps the first page's version."""
    token: str | None = None
    while True:
        page = _parsed(lister(limit=LIST_PAGE, _continue=token, _preload_content=False, **params))
        yield page
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def _discard(response: Any) -> None:
    """An answer not needed (a create's echo): read off the connection, so it goes back to the pool, but never parsed
    (building the client's models for a Job's echo cost more CPU than the rest of its reconcile)."""
    response.drain_conn()
    response.release_conn()


class _Fenced(client.ApiClient):
    """An API client that calls `before` ahead of every request (controller/leader.py: Elector.check, which ends a
    replica that may no longer lead before it writes anything)."""

    def __init__(self, configuration: client.Configuration, before: Callable[[], None]) -> None:
        super().__init__(configuration)
        self._before = before

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        self._before()
        return super().call_api(*args, **kwargs)


def api_client(pool_size: int, before_call: Callable[[], None] | None = None) -> client.ApiClient:
    """In-cluster credentials when running in a pod, the kubeconfig ($KUBECONFIG, read now) otherwise.

    The connection pool matches the handler threads, so no thread pays a fresh TLS handshake per call.
    """
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except config.ConfigException:
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"), client_configuration=configuration)
    configuration.connection_pool_maxsize = pool_size
    return client.ApiClient(configuration) if before_call is None else _Fenced(configuration, before_call)


class Cluster:
    """Typed access to the few APIs the operator uses; `store` holds what its watches brought (controller/store.py),
    read first by the methods that say so."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.store = Store({"Pod": (POOL_LABEL, JOB_NAME_LABEL)})
        self._runtime_classes_seen: dict[str, float] = {}
        self._ensured: dict[tuple[str, str, str, str | None], float] = {}
        # Requests off a reconcile's thread: independent creates side by side, Events (a courtesy) in the background.
        self._side = ThreadPoolExecutor(SIDE_THREADS, thread_name_prefix="api-side")
        self._events = ThreadPoolExecutor(EVENT_THREADS, thread_name_prefix="api-events")
        self._events_said: dict[tuple[str, str], float] = {}
        self._events_pending = self._events_dropped = 0
        self._events_lock = threading.Lock()
        self.core = client.CoreV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.net = client.NetworkingV1Api(self.api)
        self.node = client.NodeV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def _creators(self) -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
        return {
            "ServiceAccount": (self.core.create_namespaced_service_account, self.core.read_namespaced_service_account),
            "ConfigMap": (self.core.create_namespaced_config_map, self.core.read_namespaced_config_map),
            "NetworkPolicy": (self.net.create_namespaced_network_policy, self.net.read_namespaced_network_policy),
            "PersistentVolumeClaim": (
                self.core.create_namespaced_persistent_volume_claim,
                self.core.read_namespaced_persistent_volume_claim,
            ),
            "Job": (self.batch.create_namespaced_job, self.batch.read_namespaced_job),
        }

    def ensure(self, manifest: Manifest, owner_uid: str | None) -> None:
        """Create the object, or find the one a previous reconcile made.

        An existing object with that name that belongs to someone else (another task's leftover, a user's
        own object) is never adopted: the reconcile waits and retries instead.
        """
        create, read = self._creators()[manifest["kind"]]
        meta = manifest["metadata"]
        key = (manifest["kind"], meta["namespace"], meta["name"], owner_uid)
        if time.monotonic() - self._ensured.get(key, -ENSURED_CACHE_SECONDS) < ENSURED_CACHE_SECONDS:
            return
        try:
            _discard(create(meta["namespace"], manifest, _preload_content=False))
        except ApiException as exc:
            if exc.status != 409:
                raise
            existing = _parsed(read(meta["name"], meta["namespace"], _preload_content=False))
            owners = {ref.get("uid") for ref in existing["metadata"].get("ownerReferences") or []}
            if owner_uid is not None and owner_uid not in owners:
                message = f"{manifest['kind']} {meta['name']} exists and is not owned by this AgentTask"
                raise kopf.TemporaryError(f"{message}; waiting for it to go", delay=5) from None
        self._remember_ensured(key)

    def ensure_all(self, manifests: list[Manifest], owner_uid: str | None) -> None:
        """ensure() each, side by side (they do not depend on one another): one round trip's wait instead of several."""
        for done in [self.ensure_soon(manifest, owner_uid) for manifest in manifests]:
            done.result()

    def ensure_soon(self, manifest: Manifest, owner_uid: str | None) -> Future[None]:
        """ensure() on another thread, while the caller goes on; its result() is ensure()'s (or raises as it did)."""
        return self._side.submit(self.ensure, manifest, owner_uid)

    def _remember_ensured(self, key: tuple[str, str, str, str | None]) -> None:
        at = time.monotonic()
        if len(self._ensured) > 10_000:  # tasks' objects are ensured once each: forget the old ones
            self._ensured = {k: t for k, t in self._ensured.items() if at - t < ENSURED_CACHE_SECONDS}
        self._ensured[key] = at

    def runtime_class_exists(self, name: str) -> bool:
        """Positive answers are cached briefly: a RuntimeClass deleted meanwhile still fails closed, since
        the API server rejects pods that name a missing RuntimeClass; a negative answer is never cached."""
        seen = self._runtime_classes_seen.get(name)
        if seen is not None and time.monotonic() - seen < RUNTIME_CLASS_CACHE_SECONDS:
            return True
        try:
            self.node.read_runtime_class(name)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        self._runtime_classes_seen[name] = time.monotonic()
        return True

    def missing_mcp_servers(self, namespace: str, names: list[str]) -> list[str]:
        listed = cast(
            dict[str, Any], self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "mcpservers")
        )
        present = {item["metadata"]["name"] for item in listed.get("items", [])}
        return [name for name in names if name not in present]

    def _read_ours(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """One of our resources, or None if there is none of that name."""
        try:
            return cast(
                dict[str, Any], self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def read_task(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The task as the API server has it now (and so in the store)."""
        return self._read_kept(AGENTTASK_PLURAL, "AgentTask", namespace, name)

    def _read_kept(self, plural: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._kept(kind, namespace, name, self._read_ours(plural, namespace, name))

    def _kept(self, kind: str, namespace: str, name: str, found: dict[str, Any] | None) -> dict[str, Any] | None:
        if found is None:
            self.store.drop(kind, namespace, name)
        else:
            self.store.put(kind, found)
        return found

    def task(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The task as last seen (the store), else as read."""
        return self.store.get("AgentTask", namespace, name) or self.read_task(namespace, name)

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A Job as last seen, else as read."""
        return self.store.get("Job", namespace, name) or self.read_job(namespace, name)

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A pod as last seen, else as read."""
        return self.store.get("Pod", namespace, name) or self.read_pod(namespace, name)

    def pool(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A SandboxPool as last seen, else as read."""
        return self.store.get("SandboxPool", namespace, name) or self.read_pool(namespace, name)

    def session(self, namespace: str, name: str) -> dict[str, Any] | None:
        """An AgentSession as last seen, else as read."""
        return self.store.get("AgentSession", namespace, name) or self.read_session(namespace, name)

    def job_pods(self, namespace: str, job_name: str) -> list[dict[str, Any]]:
        """A Job's pods as last seen, else as listed."""
        seen = self.store.labelled("Pod", namespace, JOB_NAME_LABEL, job_name)
        return seen if seen is not None else self.pods(namespace, f"{JOB_NAME_LABEL}={job_name}")

    def pool_pods(self, namespace: str, pool_name: str) -> list[dict[str, Any]]:
        """All of a pool's pods as last seen, once the store holds them all (controller/store.py), else as listed."""
        if self.store.complete("Pod", namespace, POOL_LABEL, pool_name):
            return self.store.labelled("Pod", namespace, POOL_LABEL, pool_name) or []
        return self.relist_pool_pods(namespace, pool_name)

    def relist_pool_pods(self, namespace: str, pool_name: str) -> list[dict[str, Any]]:
        """All of a pool's pods as the API server has them now, into the store, which holds them all from then on."""
        listed = _parsed(
            self.core.list_namespaced_pod(namespace, label_selector=f"{POOL_LABEL}={pool_name}", _preload_content=False)
        )
        self.store.replace("Pod", namespace, POOL_LABEL, pool_name, listed)
        return list(listed.get("items") or [])

    def _list_ours(self, plural: str) -> list[dict[str, Any]]:
        """Every one of our resources of a kind, cluster-wide."""
        listed = cast(dict[str, Any], self.custom.list_cluster_custom_object(GROUP, VERSION, plural))
        return list(listed.get("items", []))

    def _patch_status_ours(self, plural: str, namespace: str, name: str, status: Status) -> None:
        """A merge patch of a resource's status; one deleted meanwhile has nothing left to report on."""
        try:
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, plural, name, {"status": status.wire()}
            )
        except ApiException as exc:
            if exc.status != 404:
                raise

    def patch_task_status(self, namespace: str, name: str, status: AgentTaskStatus) -> None:
        self._patch_status_ours(AGENTTASK_PLURAL, namespace, name, status)

    def list_tasks(self) -> list[dict[str, Any]]:
        return self._list_ours(AGENTTASK_PLURAL)

    def read_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return _parsed(self.batch.read_namespaced_job(name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _until_no_conflict(self, what: str, attempt: Callable[[], T]) -> T:
        """Run a read-modify-write (its write guarded by the resourceVersion it read) again while the write is refused
        as a conflict (409: the object changed, or was created, since it was read), so no concurrent write is lost."""
        for _ in range(_CONFLICT_RETRIES):
            try:
                return attempt()
            except ApiException as exc:
                if exc.status != 409:
                    raise
        raise kopf.TemporaryError(f"{what} kept changing under us", delay=1)

    def update_task_status(
        self,
        namespace: str,
        name: str,
        change: Callable[[AgentTaskStatus, int], AgentTaskStatus],
        known: dict[str, Any] | None = None,
    ) -> StatusUpdate[AgentTaskStatus] | None:
        """Write `change(status, generation)` (controller/status.py: merge) to the task's status subresource, unless it
        is the status as it is; None when the task is gone. `known`: the task as the caller just read it, tried first
        (no read of its own: a conflict, when it changed since, reads it again)."""
        return self._update_status(AGENTTASK_PLURAL, "AgentTask", AgentTaskStatus, namespace, name, change, known)

    def update_session_status(
        self,
        namespace: str,
        name: str,
        change: Callable[[AgentSessionStatus, int], AgentSessionStatus],
        known: dict[str, Any] | None = None,
    ) -> StatusUpdate[AgentSessionStatus] | None:
        """As update_task_status, for a session: the gateway writes its conditions (AwaitingApproval) too, so a write
        built from a stale read must not replace them (a merge patch replaces the whole conditions list)."""
        return self._update_status(
            AGENTSESSION_PLURAL, "AgentSession", AgentSessionStatus, namespace, name, change, known
        )

    def _update_status(
        self,
        plural: str,
        kind: str,
        model: type[S],
        namespace: str,
        name: str,
        change: Callable[[S, int], S],
        known: dict[str, Any] | None,
    ) -> StatusUpdate[S] | None:
        cached = known if known is not None else self.store.get(kind, namespace, name)
        first = [cached] if cached is not None else []

        def attempt() -> StatusUpdate[S] | None:
            document = first.pop() if first else self._read_kept(plural, kind, namespace, name)
            if document is None:
                return None
            current = model.of(document)
            new = change(current, generation(document))
            if new == current:
                return StatusUpdate(document, current, current, written=False)
            body = {"metadata": {"resourceVersion": document["metadata"]["resourceVersion"]}, "status": new.wire()}
            try:
                patch = self.custom.patch_namespaced_custom_object_status
                written = patch(GROUP, VERSION, namespace, plural, name, body)
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            self.store.put(kind, cast(dict[str, Any], written))
            return StatusUpdate(cast(dict[str, Any], written), current, new, written=True)

        return self._until_no_conflict(f"status of {kind} {namespace}/{name}", attempt)

    def create_record(self, manifest: Manifest) -> tuple[dict[str, Any], bool]:
        """Create a name's run record (controller/ledger.py), or read the one that exists: (the record, created)."""
        meta = manifest["metadata"]
        create: Callable[..., Any] = self.core.create_namespaced_config_map  # takes the plain manifest
        try:
            return _parsed(create(meta["namespace"], manifest, _preload_content=False)), True
        except ApiException as exc:
            if exc.status != 409:
                raise
        found = self.read_record(meta["namespace"], meta["name"])
        if found is None:  # deleted in between (the retention sweep, a person): decide again
            raise kopf.TemporaryError(f"run record {meta['name']} went while it was read", delay=0.1)
        return found, False

    def read_record(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return _parsed(self.core.read_namespaced_config_map(name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def replace_record(self, manifest: Manifest, resource_version: str) -> dict[str, Any]:
        """Replace a run record as it was read (a run-again): a record changed since is a conflict to decide again."""
        meta = manifest["metadata"]
        body = {**manifest, "metadata": {**meta, "resourceVersion": resource_version}}
        replace: Callable[..., Any] = self.core.replace_namespaced_config_map
        try:
            return _parsed(replace(meta["name"], meta["namespace"], body, _preload_content=False))
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
        raise kopf.TemporaryError(f"run record {meta['name']} changed while it was replaced", delay=0.1)

    def patch_record(self, namespace: str, name: str, patch: list[dict[str, str]]) -> bool:
        """A JSON patch of a run record; False when its test failed (the record is another run's) or it is gone."""
        try:
            self.core.patch_namespaced_config_map(name, namespace, patch, _content_type="application/json-patch+json")
        except ApiException as exc:
            if exc.status in (404, 409, 422):
                return False
            raise
        return True

    def delete_config_map(self, namespace: str, name: str, resource_version: str) -> bool:
        """Delete a ConfigMap as it was read (a run record, the legacy ledger); False when it changed or went."""
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=resource_version))
        try:
            self.core.delete_namespaced_config_map(name, namespace, body=options)
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    def config_maps(self, selector: str = "", field_selector: str = "") -> Iterator[dict[str, Any]]:
        """ConfigMaps in every namespace, a page at a time (the retention sweep may list tens of thousands)."""
        lister = self.core.list_config_map_for_all_namespaces
        for page in _pages(lister, label_selector=selector or None, field_selector=field_selector or None):
            yield from page.get("items") or []

    def _listers(self) -> dict[str, Callable[..., Any]]:
        return {"Pod": self.core.list_pod_for_all_namespaces, "Job": self.batch.list_job_for_all_namespaces}

    def list_all(self, kind: str, selector: str) -> tuple[list[dict[str, Any]], str]:
        """Every object of a kind (Pod, Job) in every namespace that `selector` matches, and the resourceVersion the
        listing is of (its pages are one snapshot)."""
        items: list[dict[str, Any]] = []
        version = ""
        typed = {"apiVersion": WATCHED_API_VERSIONS[kind], "kind": kind}  # a list's items lack them
        for page in _pages(self._listers()[kind], label_selector=selector):
            items.extend({**typed, **item} for item in page.get("items") or [])
            version = str(page["metadata"].get("resourceVersion", ""))
        return items, version

    def watch_all(self, kind: str, selector: str, version: str, seconds: int) -> Iterator[dict[str, Any]]:
        """The watch events of a kind (Pod, Job) in every namespace that `selector` matches, from `version`, with
        bookmarks, until the API server ends the watch after about `seconds`."""
        response = self._listers()[kind](
            label_selector=selector,
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=seconds,
            _preload_content=False,
            _request_timeout=(WATCH_CONNECT_SECONDS, seconds + WATCH_SLACK_SECONDS),
        )
        try:
            rest = b""
            for chunk in response.stream(WATCH_CHUNK, decode_content=True):
                *lines, rest = (rest + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        finally:
            response.release_conn()

    def record_event(self, obj: dict[str, Any], reason: str, message: str, warning: bool = False) -> None:
        """A Kubernetes Event about one of our resources (an AgentTask, a SandboxPool), for `kubectl describe`; sent in
        the background (the reconcile that has something to say does not wait for it). The same reason about the same
        object is said at most once per EVENT_REPEAT_SECONDS, as client-go's spam filter does (a pool draining at 75
        claims/s said "Refilled" 75 times a second)."""
        key, at = (obj["metadata"]["uid"], reason), time.monotonic()
        with self._events_lock:
            if at - self._events_said.get(key, -EVENT_REPEAT_SECONDS) < EVENT_REPEAT_SECONDS:
                return
            if len(self._events_said) > 10_000:
                self._events_said = {k: t for k, t in self._events_said.items() if at - t < EVENT_REPEAT_SECONDS}
            self._events_said[key] = at
            if self._events_pending >= EVENT_BACKLOG:  # the API server is slower than what there is to say
                self._events_dropped += 1
                if self._events_dropped % 100 == 1:
                    log.warning("events dropped under load", extra={"dropped": self._events_dropped})
                return
            self._events_pending += 1
        self._events.submit(self._send_event, _event(obj, reason, message, warning))

    def _send_event(self, event: Manifest) -> None:
        meta = event["involvedObject"]
        create: Callable[..., Any] = self.core.create_namespaced_event  # takes the plain manifest, as ensure() does
        try:
            _discard(create(meta["namespace"], event, _preload_content=False))
        except ApiException as exc:  # an event is a courtesy; the status already holds the truth
            log.warning("could not record event for %s/%s: %s", meta["namespace"], meta["name"], exc.status)
        finally:
            with self._events_lock:
                self._events_pending -= 1

    def read_pool(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._read_ours(SANDBOXPOOL_PLURAL, namespace, name)

    def list_pools(self) -> list[dict[str, Any]]:
        return self._list_ours(SANDBOXPOOL_PLURAL)

    def patch_pool_status(self, namespace: str, name: str, status: SandboxPoolStatus) -> None:
        self._patch_status_ours(SANDBOXPOOL_PLURAL, namespace, name, status)

    def read_session(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._read_ours(AGENTSESSION_PLURAL, namespace, name)

    def list_sessions(self) -> list[dict[str, Any]]:
        return self._list_ours(AGENTSESSION_PLURAL)

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        listed = _parsed(self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False))
        return list(listed.get("items") or [])

    def claimed_task_pods(self) -> list[dict[str, Any]]:
        """Pool sandboxes claimed by tasks, in every namespace, in any phase: as last seen once every pod is
        (controller/store.py), else as listed."""
        if self.store.complete("Pod"):
            claimed = {SANDBOX_STATE_LABEL: CLAIMED}.items()
            return [
                pod
                for pod in self.store.of_kind("Pod")
                if claimed <= (labels := pod["metadata"].get("labels") or {}).items() and labels.get(TASK_LABEL)
            ]
        return self.all_pods(f"{SANDBOX_STATE_LABEL}={CLAIMED},{TASK_LABEL}")

    def all_pods(self, selector: str) -> list[dict[str, Any]]:
        """Pods in every namespace."""
        listed = self.core.list_pod_for_all_namespaces(label_selector=selector, _preload_content=False)
        return list(_parsed(listed).get("items") or [])

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return _parsed(self.core.read_namespaced_pod(name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create_pod(self, manifest: Manifest) -> dict[str, Any]:
        """The pod made, as the API server answered (and so in the store: a reconcile reading it next counts it)."""
        create: Callable[..., Any] = self.core.create_namespaced_pod  # takes the plain manifest, as ensure() does
        made = _parsed(create(manifest["metadata"]["namespace"], manifest, _preload_content=False))
        self.store.put("Pod", made)
        return made

    def delete_pod(self, namespace: str, name: str) -> None:
        """The pod deleted; as the API server answered (terminating) in the store, or gone from it."""
        try:
            self.store.put("Pod", _parsed(self.core.delete_namespaced_pod(name, namespace, _preload_content=False)))
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.store.drop("Pod", namespace, name)

    def patch_pod_if_unchanged(self, pod: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any] | None:
        """A merge patch that applies only to the pod as it was read (its resourceVersion): None when it changed
        meanwhile (another claim took it) or is gone, so two tasks can never claim the same pod."""
        meta = pod["metadata"]
        body = {**patch, "metadata": {**patch.get("metadata", {}), "resourceVersion": meta["resourceVersion"]}}
        try:
            answer = _parsed(
                self.core.patch_namespaced_pod(
                    meta["name"],
                    meta["namespace"],
                    body,
                    _content_type="application/merge-patch+json",
                    _preload_content=False,
                )
            )
            self.store.put("Pod", answer)
            return answer
        except ApiException as exc:
            if exc.status in (404, 409):
                return None
            raise

    def create_secret_once(self, namespace: str, name: str, key: str, value: str) -> bool:
        """Create the Secret unless one of that name exists (which is left as it is). True if it was created."""
        body: Manifest = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "labels": MANAGED_LABELS},
            "type": "Opaque",
            "stringData": {key: value},
        }
        create: Callable[..., Any] = self.core.create_namespaced_secret  # takes the plain manifest, as ensure() does
        try:
            create(namespace, body)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def delete_children(self, namespace: str, task_name: str) -> None:
        """A finished task's Job (its pods with it), ConfigMap, ServiceAccount and NetworkPolicy, past its
        ttlSecondsAfterFinished; the AgentTask itself, its status and result stay (a GitOps controller would
        re-create a deleted task). They are named after the task, which still exists: no other task's can be."""
        name = child_name(task_name)
        background = client.V1DeleteOptions(propagation_policy="Background")
        for delete in (
            self.batch.delete_namespaced_job,
            self.core.delete_namespaced_config_map,
            self.core.delete_namespaced_service_account,
            self.net.delete_namespaced_network_policy,
        ):
            try:
                delete(name, namespace, body=background)
            except ApiException as exc:
                if exc.status != 404:
                    raise


def _event(obj: dict[str, Any], reason: str, message: str, warning: bool) -> Manifest:
    """A core/v1 Event about `obj` (only what it needs of it is kept while the Event waits to be sent)."""
    meta = obj["metadata"]
    stamp = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "source": {"component": "mcpexec-operator"},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
