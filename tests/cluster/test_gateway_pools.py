"""The gateway and a SandboxPool's sandboxes against a real API server: pod-bound tokens, the claim index's watch,
the assignment long poll, the ceiling, and the runtime waiting for its task.

No kubelet runs in this tier: the pool's pods are objects that are never scheduled, but the API server binds tokens
to them (TokenRequest with a Pod boundObjectRef, as the kubelet asks for a projected token) and its TokenReview
names the pod. The test writes each task's `status.claim` itself, as the operator would.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from kubernetes import client, config

from gateway.approvals.redis_holds import RedisHolds
from gateway.cluster.approval_status import ApprovalStatusWriter
from gateway.cluster.auth import ClusterAuthenticator
from gateway.cluster.claims import ClaimEntry, ClaimIndex
from gateway.cluster.directory import KubeDirectory
from gateway.cluster.servers import ClusterServers
from gateway.cluster.task_reports import KubeTaskReports
from gateway.core import GatewayBackends, GatewayCore
from gateway.executions.redis_store import RedisExecutionStore
from gateway.pii.vault import MemoryVault
from gateway.tools.catalog import namespaced_server_key
from gateway.web.app import create_app
from gateway.web.serving import BackgroundServer
from mcpexec.api.agenttask import AgentTaskSpec, runtime_task_config
from mcpexec.api.meta import (
    AGENTTASK_PLURAL,
    API_VERSION,
    GROUP,
    IDLE,
    MCPSERVER_PLURAL,
    POOL_LABEL,
    SANDBOX_STATE_LABEL,
    TASK_LABEL,
    VERSION,
)
from mcpexec.local.sandbox.base import RUNTIME_PACKAGE
from runtime import contract
from tests.cluster import kube
from tests.cluster.kube import create_task, wait_for
from tests.support.components import demo_over_http, free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

T = TypeVar("T")
AUDIENCE = "mcpexec-gateway"
POOL = "fast"
POOL_ACCOUNT = f"mcpexec-pool-{POOL}"
SANDBOX_PYTHON = "/usr/bin/python3"
# The template's policy when the sandbox was claimed: the task's ceiling.
CEILING = {"mcpServers": ["crm"], "tools": {"allow": ["crm/get_customer", "crm/search_customers"]}}
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"  # the claim's span (tracing on)


class ClusterGateway:
    """The cluster-mode gateway wired as `gateway.cluster.serve` wires it (MCPServer resources, the claim index and
    its watch, TokenReview auth, the assigner, the tasks' result reports), served on a loopback port from its own
    event-loop thread. Nothing is cached (cache_seconds=0), so every request is answered from the API server and the
    index as they are now."""

    def __init__(
        self,
        cluster: ControlPlane,
        port: int | None = None,
        redis_url: str | None = None,
        reports_directory: KubeDirectory | None = None,
    ) -> None:
        """`redis_url`: share sessions' executions and held calls with other replicas there (else this process keeps
        the executions, and holds no calls);
        `reports_directory`: where tasks' result reports are written (else the API server everything else uses)."""
        self.redis_url = redis_url
        self.directory = KubeDirectory(config.new_client_from_config(config_file=str(cluster.kubeconfig)))
        self.reports = KubeTaskReports(reports_directory or self.directory)
        self.claims = ClaimIndex(self.directory)
        self.servers = ClusterServers(self.directory, 600, frozenset())
        self.auth = ClusterAuthenticator(self.directory, AUDIENCE, self.claims, cache_seconds=0)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="cluster-gateway", daemon=True)
        self._core: GatewayCore | None = None
        self._http: BackgroundServer | None = None
        self._follow: asyncio.Task[None] | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=120)

    async def _start(self) -> None:
        await self.servers.refresh()
        await self.claims.load()
        self._follow = asyncio.create_task(self.claims.follow())
        self._core = GatewayCore(
            GatewayBackends(
                self.auth,
                self.servers.specs,
                MemoryVault(),
                server_key=namespaced_server_key,
                server_headers=self.servers.headers,
                execution_store=None if self.redis_url is None else RedisExecutionStore(self.redis_url),
                assigner=self.auth,
                task_reports=self.reports,
                approval_holds=None if self.redis_url is None else RedisHolds(self.redis_url),
            )
        )
        self._core.approvals.notices = ApprovalStatusWriter(self.directory, self._core.approvals)
        await self._core.start()
        self._http = BackgroundServer(create_app(self._core), port=self.port)
        await self._http.start()

    async def _stop(self) -> None:
        assert self._http is not None and self._core is not None and self._follow is not None
        await self._http.stop()
        self._follow.cancel()
        await self._core.close()

    def __enter__(self) -> ClusterGateway:
        self._thread.start()
        self.run(self._start())
        return self

    def __exit__(self, *_exc: object) -> None:
        if not self._thread.is_alive():  # frozen: resumed only to be stopped
            self._thread = threading.Thread(target=self._loop.run_forever, name="cluster-gateway", daemon=True)
            self._thread.start()
        self.run(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def freeze(self) -> None:
        """Stop this replica where it is, as one that died: nothing it was doing goes on or cleans up, its callers
        get no answer (the block's end resumes it only to stop it)."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def claim(self, namespace: str, pod_uid: str) -> ClaimEntry | None:
        """What this gateway's index says now."""

        async def lookup() -> ClaimEntry | None:
            return self.claims.lookup(namespace, pod_uid)

        return self.run(lookup())

    def client(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _pool_account(namespace: str) -> None:
    body = {"metadata": {"name": POOL_ACCOUNT, "labels": {POOL_LABEL: POOL}}, "automountServiceAccountToken": False}
    client.CoreV1Api().create_namespaced_service_account(namespace, body)


def _pool_pod(namespace: str, name: str) -> dict[str, Any]:
    """An idle sandbox of the pool, as the operator makes it (never scheduled here)."""
    body = {
        "metadata": {"name": name, "labels": {POOL_LABEL: POOL, SANDBOX_STATE_LABEL: IDLE}},
        "spec": {
            "serviceAccountName": POOL_ACCOUNT,
            "automountServiceAccountToken": False,
            "containers": [{"name": "sandbox", "image": "mcpexec-runtime:test"}],
        },
    }
    created = client.CoreV1Api().create_namespaced_pod(namespace, body)
    plain: dict[str, Any] = client.ApiClient().sanitize_for_serialization(created)
    return plain


def _pod_token(namespace: str, pod: dict[str, Any]) -> str:
    """The projected token the kubelet would mount in the pod: bound to the pod, for the gateway."""
    bound = {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
    request = {"spec": {"audiences": [AUDIENCE], "expirationSeconds": 600, "boundObjectRef": bound}}
    answer = client.CoreV1Api().create_namespaced_service_account_token(POOL_ACCOUNT, namespace, request)
    return str(answer.status.token)


def _write_claim(namespace: str, task: str, pod: dict[str, Any], **status: Any) -> None:
    """The task's status as the operator writes it when it claims `pod` for the task."""
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    claim = {"pool": POOL, "podName": name, "podUID": uid, "policy": CEILING}
    body = {"status": {"claim": claim, "launchType": "Warm", "podName": name, **status}}
    client.CustomObjectsApi().patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, AGENTTASK_PLURAL, task, body
    )


def _crm_server(namespace: str, port: int) -> None:
    body = {
        "apiVersion": API_VERSION,
        "kind": "MCPServer",
        "metadata": {"name": "crm"},
        "spec": {"transport": "streamableHttp", "url": f"http://127.0.0.1:{port}/mcp"},
    }
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, MCPSERVER_PLURAL, body)


def _error(answer: httpx.Response) -> tuple[int, str]:
    return answer.status_code, answer.json()["error"]["code"]


def _call(gw: httpx.Client, tool: str = "get_customer") -> httpx.Response:
    return gw.post(f"/v1/tools/crm/{tool}/call", json={"arguments": {"customer_id": "C001"}})


@contextmanager
def _other_namespace() -> Iterator[str]:
    name = kube.create_namespace()
    try:
        yield name
    finally:
        client.CoreV1Api().delete_namespace(name)


def test_a_pool_sandbox_serves_only_the_task_that_claimed_it(cluster: ControlPlane, namespace: str) -> None:
    _pool_account(namespace)
    pod_a, pod_b = _pool_pod(namespace, f"{POOL_ACCOUNT}-aaaaa"), _pool_pod(namespace, f"{POOL_ACCOUNT}-bbbbb")
    token_a, token_b = _pod_token(namespace, pod_a), _pod_token(namespace, pod_b)
    # Its egress grant too: the assignment is the whole task.json, `egress` included (the runtime's proxy settings).
    egress = {"hosts": ["pypi.org"], "ports": [443]}
    spec = {
        "poolRef": {"name": POOL},
        "mcpServers": ["crm"],
        "code": "print(1)",
        "timeoutSeconds": 120,
        "egress": egress,
    }
    task = create_task(namespace, agenttask("report", **spec))
    port = free_port()
    _crm_server(namespace, port)
    with demo_over_http(port), ClusterGateway(cluster) as gateway, gateway.client(token_a) as sandbox_a:
        # Idle: no task, so nothing at all (the wait for a lagging claim is bounded), and no assignment yet.
        started = time.monotonic()
        assert _error(_call(sandbox_a)) == (403, "sandbox_not_claimed")
        assert time.monotonic() - started < 10
        assert _error(sandbox_a.get("/v1/servers")) == (403, "sandbox_not_claimed")
        assert _error(sandbox_a.post("/v1/llm/chat/completions", json={"messages": []})) == (403, "sandbox_not_claimed")
        assert sandbox_a.get("/v1/assignment", params={"wait": 0.5}).status_code == 204

        # A task in another namespace naming this very pod is not this sandbox's (the index holds it, apart).
        with _other_namespace() as elsewhere:
            create_task(elsewhere, agenttask("intruder", **spec))
            _write_claim(elsewhere, "intruder", pod_a)
            wait_for(lambda: gateway.claim(elsewhere, pod_a["metadata"]["uid"]), 30, "the other namespace's claim")
            assert sandbox_a.get("/v1/assignment", params={"wait": 0.5}).status_code == 204
            assert _error(_call(sandbox_a)) == (403, "sandbox_not_claimed")

        # The long poll is answered by the watch as soon as the operator's status write lands.
        with ThreadPoolExecutor(1) as pool:
            polling = pool.submit(sandbox_a.get, "/v1/assignment", params={"wait": 20})
            time.sleep(1)
            assert not polling.done()
            claimed_at = time.monotonic()
            # With the claim, the operator's span that made it (tracing on): the runtime continues that trace.
            _write_claim(namespace, "report", pod_a, traceId=TRACEPARENT.split("-")[1], traceparent=TRACEPARENT)
            answer = polling.result(timeout=20)
            answered_in = time.monotonic() - claimed_at
        assert answer.status_code == 200, answer.text
        assert answered_in < 3, f"the claim took {answered_in:.1f}s to reach the waiting sandbox"
        expected = runtime_task_config(
            namespace, "report", task["metadata"]["uid"], AgentTaskSpec.model_validate(spec), traceparent=TRACEPARENT
        )
        assert answer.json() == expected and expected["egress"] == egress and expected["traceparent"] == TRACEPARENT

        # Claimed: the task's calls, within the task's policy and the pool's ceiling.
        called = _call(sandbox_a)
        assert called.status_code == 200, called.text
        assert called.json()["structuredContent"]["id"] == "C001"
        listed = sandbox_a.get("/v1/tools", params={"server": "crm"}).json()["tools"]
        assert sorted(listed) == ["crm/get_customer", "crm/search_customers"]
        assert _error(_call(sandbox_a, "send_message")) == (403, "forbidden")

        # Another sandbox of the same pool reads nothing of it.
        with gateway.client(token_b) as sandbox_b:
            assert sandbox_b.get("/v1/assignment", params={"wait": 1}).status_code == 204
            assert _error(_call(sandbox_b)) == (403, "sandbox_not_claimed")

        # A task's own token has no assignment to ask for.
        with gateway.client(_task_token(namespace)) as solo:
            assert _error(solo.get("/v1/assignment", params={"wait": 0})) == (403, "forbidden")

        # A finished task's sandbox serves nothing.
        _write_claim(namespace, "report", pod_a, phase="Succeeded")
        wait_for(lambda: gateway.claim(namespace, pod_a["metadata"]["uid"]) is None, 30, "the finished claim dropped")
        assert _error(_call(sandbox_a)) == (403, "sandbox_not_claimed")

        # The pod deleted and made again under its name: a new uid, which no claim names; the old pod's token dies.
        client.CoreV1Api().delete_namespaced_pod(pod_a["metadata"]["name"], namespace, grace_period_seconds=0)
        wait_for(lambda: not _pod_exists(namespace, pod_a["metadata"]["name"]), 30, "the pod gone")
        again = _pool_pod(namespace, pod_a["metadata"]["name"])
        with gateway.client(_pod_token(namespace, again)) as sandbox_again:
            assert sandbox_again.get("/v1/assignment", params={"wait": 1}).status_code == 204
            assert _error(_call(sandbox_again)) == (403, "sandbox_not_claimed")
        wait_for(lambda: _call(sandbox_a).status_code == 401, 30, "the deleted pod's token refused")


def _pod_exists(namespace: str, name: str) -> bool:
    return any(p.metadata.name == name for p in client.CoreV1Api().list_namespaced_pod(namespace).items)


def _task_token(namespace: str) -> str:
    """A task's own ServiceAccount token (a cold task's), made as the operator makes it."""
    task = create_task(namespace, agenttask("solo", mcpServers=["crm"]))
    owner = {"apiVersion": API_VERSION, "kind": "AgentTask", "name": "solo", "uid": task["metadata"]["uid"]}
    metadata = {"name": "mcpexec-solo", "labels": {TASK_LABEL: "solo"}, "ownerReferences": [owner]}
    client.CoreV1Api().create_namespaced_service_account(namespace, {"metadata": metadata})
    request = {"spec": {"audiences": [AUDIENCE], "expirationSeconds": 600}}
    answer = client.CoreV1Api().create_namespaced_service_account_token("mcpexec-solo", namespace, request)
    return str(answer.status.token)


@contextmanager
def pool_runtime(token: str, gateway_port: int) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """`python3 -m runtime` as a pool's sandbox runs it (no task file, a pod-bound token), asking the gateway on
    `gateway_port` for its assignment; and its workspace. Killed on exit if still running."""
    with sandbox_runtime(token, gateway_port) as running:
        yield running


@contextmanager
def sandbox_runtime(
    token: str, gateway_port: int, task: dict[str, Any] | None = None, report: bool = False
) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """`python3 -m runtime` as a sandbox runs it against the gateway on `gateway_port`: a cold task's with its task
    config `task`, else a pool's (no task file: it asks for its assignment); `report`: it reports its result to the
    gateway, as where its result is the termination message. Its workspace; killed on exit if still running."""
    with tempfile.TemporaryDirectory(prefix="mcpexec-sandbox-") as tmp:
        root = Path(tmp)
        (root / "path").mkdir()
        (root / "path" / "runtime").symlink_to(RUNTIME_PACKAGE)
        workspace, token_file, task_file = root / "workspace", root / "token", root / "task.json"
        workspace.mkdir()
        token_file.write_text(token + "\n")
        if task is not None:
            task_file.write_text(json.dumps(task))
        environment = contract.sandbox_environment(
            gateway_url=f"http://127.0.0.1:{gateway_port}",
            result_file=str(workspace / "result.json"),
            tmpdir=str(root),
            token_file=str(token_file),
        )
        environment |= {
            **({} if task is not None else {contract.AWAIT_ASSIGNMENT_ENV: "1"}),
            **({contract.REPORT_RESULT_ENV: "1"} if report else {}),
            contract.TASK_FILE_ENV: str(task_file),
            contract.WORKSPACE_ENV: str(workspace),
            contract.SKILLS_ENV: str(root / "skills"),
            "HOME": str(workspace),
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(root / "path"),
        }
        runtime = subprocess.Popen(
            [SANDBOX_PYTHON, "-S", "-m", "runtime"],
            cwd=workspace,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            yield runtime, workspace
        finally:
            if runtime.poll() is None:
                runtime.kill()
                runtime.wait()


@pytest.mark.timeout(180)
def test_the_runtime_waits_for_its_assignment_then_runs_that_task(cluster: ControlPlane, namespace: str) -> None:
    """`python3 -m runtime` in a pool sandbox's environment (no task file, a pod-bound token): it starts before the
    gateway can be reached, waits through 204s, and once the task's claim is written runs that task with the
    task's tools (wrappers generated after the assignment), writes its result and exits."""
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-ccccc")
    code = "from servers.crm import get_customer\nprint('customer', get_customer(customer_id='C001')['id'])"
    create_task(namespace, agenttask("warm", poolRef={"name": POOL}, mcpServers=["crm"], code=code))
    crm_port, gateway_port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    with pool_runtime(_pod_token(namespace, pod), gateway_port) as (runtime, workspace):
        time.sleep(1)  # the gateway is not there yet: the runtime keeps trying
        assert runtime.poll() is None
        with demo_over_http(crm_port), ClusterGateway(cluster, gateway_port):
            time.sleep(2)  # polls answered 204: still waiting
            assert runtime.poll() is None
            _write_claim(namespace, "warm", pod)
            _stdout, stderr = runtime.communicate(timeout=60)
        result = json.loads((workspace / "result.json").read_text())
    assert runtime.returncode == 0, (result, stderr)
    assert result["phase"] == "Succeeded"
    assert result["result"] == "customer C001\n"
    assert result["usage"]["toolCalls"] == 1
