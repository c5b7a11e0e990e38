"""The gateway's door for people against a real API server: the execute API with real ServiceAccount tokens
(TokenReview, then a SubjectAccessReview against the chart's session-user ClusterRole), an AgentSession's pool
sandbox served as that session (the real runtime, as a local process holding a pod-bound token, enters its session
loop), and the MCP front door with the MCP Python SDK client, which creates an AgentSession (the real operator
claims a warm sandbox for it) and deletes it when the client closes. The stateless-request rule is both front doors'
(this one and `mcpexec serve --http`): one test over the two."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import jwt
import kopf.testing
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from gateway.cluster.auth import ClusterAuthenticator
from gateway.cluster.claims import ClaimIndex
from gateway.cluster.people.server import SessionsServer
from gateway.cluster.people.sessions import ClusterSessions
from gateway.cluster.people.users import SessionUsers
from gateway.web.serving import BackgroundServer
from mcpexec.api.meta import AGENTSESSION_PLURAL, GROUP, VERSION
from tests.cluster import kube
from tests.cluster.kube import wait_for
from tests.cluster.test_gateway_pools import (
    AUDIENCE,
    CEILING,
    POOL,
    POOL_ACCOUNT,
    ClusterGateway,
    _crm_server,
    _pod_token,
    _pool_account,
    _pool_pod,
    pool_runtime,
)
from tests.cluster.test_sessions import create_session, pod_gone, session_status, warm_pool
from tests.support.chart import render
from tests.support.components import demo_over_http, free_port, listening
from tests.support.control_plane import ControlPlane
from tests.support.session_api import execute


class SessionsGateway(ClusterGateway):
    """ClusterGateway with AgentSessions: their claim index, and the people's port (execute API, MCP front door).
    Sandbox identities are cached for 30 s, as in production: the broker keeps a session while its runtime polls."""

    def __init__(self, cluster: ControlPlane, port: int | None = None, redis_url: str | None = None) -> None:
        super().__init__(cluster, port, redis_url)
        self.session_claims = ClaimIndex(self.directory, AGENTSESSION_PLURAL)
        self.auth = ClusterAuthenticator(self.directory, AUDIENCE, self.claims, sessions=self.session_claims)
        self.people_url = ""
        self._people: BackgroundServer | None = None
        self._session_follow: asyncio.Task[None] | None = None

    async def _start(self) -> None:
        await super()._start()
        await self.session_claims.load()
        self._session_follow = asyncio.create_task(self.session_claims.follow())
        assert self._core is not None
        sessions = ClusterSessions(self._core, self.directory, SessionUsers(self.directory, cache_seconds=0))
        self._people = BackgroundServer(SessionsServer(sessions), port=free_port(), lifespan="on")
        await self._people.start()
        self.people_url = f"http://127.0.0.1:{self._people.port}"

    async def _stop(self) -> None:
        assert self._people is not None and self._session_follow is not None
        await self._people.stop()
        self._session_follow.cancel()
        await super()._stop()


def _session_user_role() -> str:
    """The chart's session-user ClusterRole, created as rendered; its name."""
    return chart_cluster_role("-session-user")


def chart_cluster_role(suffix: str) -> str:
    """The chart's ClusterRole whose name ends with `suffix`, created as rendered; its name."""
    role = next(d for d in render() if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith(suffix))
    try:
        client.RbacAuthorizationV1Api().create_cluster_role(role)
    except ApiException as exc:
        if exc.status != 409:
            raise
    return str(role["metadata"]["name"])


def _user(namespace: str, name: str, role: str | None) -> str:
    """A ServiceAccount standing for a person, bound to `role` in its namespace (None: no binding), and its token as
    `kubectl create token` makes it (the API server's default audience)."""
    client.CoreV1Api().create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    if role is not None:
        binding = {
            "metadata": {"name": f"{name}-sessions"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
        client.RbacAuthorizationV1Api().create_namespaced_role_binding(namespace, binding)
    answer = client.CoreV1Api().create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": 600}}
    )
    return str(answer.status.token)


def _resigned(cluster: ControlPlane, token: str, expires_in: int) -> str:
    """`token` with its expiry moved to `expires_in` seconds from now (negative: past), signed again with the
    cluster's ServiceAccount key, as the API server signs: an expired token it really issued, without the wait."""
    claims = jwt.decode(token, options={"verify_signature": False})
    now = int(time.time())
    claims |= {"iat": now - 120, "nbf": now - 120, "exp": now + expires_in}
    key = (cluster.workdir / "sa.key").read_bytes()
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": jwt.get_unverified_header(token)["kid"]})


def _ready_session(
    namespace: str, name: str, pod: dict[str, Any], policy: dict[str, Any] = CEILING, **spec: Any
) -> dict[str, Any]:
    """An AgentSession with the status the operator writes when it claims `pod` for it (`policy`: the template's
    when it was claimed)."""
    created = create_session(namespace, name, POOL, **spec)
    pod_name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    status = {
        "phase": "Ready",
        "reason": "SandboxClaimed",
        "podName": pod_name,
        "claim": {"pool": POOL, "podName": pod_name, "podUID": uid, "policy": policy},
    }
    client.CustomObjectsApi().patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, AGENTSESSION_PLURAL, name, {"status": status}
    )
    return created


@contextmanager
def _served_pool(cluster: ControlPlane, namespace: str) -> Iterator[tuple[SessionsGateway, Any]]:
    """A warm pool of one sandbox (the real runtime as a local process holding its pod-bound token) served by a
    sessions gateway, and the crm server its template names; the gateway and the pool's pod."""
    pod = warm_pool(namespace, POOL, 1, mcpServers=["crm"])[0]
    crm_port, gateway_port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    plain: dict[str, Any] = client.ApiClient().sanitize_for_serialization(pod)
    with (
        demo_over_http(crm_port),
        SessionsGateway(cluster, gateway_port) as gateway,
        pool_runtime(_pod_token(namespace, plain), gateway_port),
    ):
        yield gateway, pod


def _session_gone(namespace: str, name: str) -> bool:
    try:
        session_status(namespace, name)
    except ApiException as exc:
        return exc.status == 404
    return False


def _execute(url: str, namespace: str, name: str, token: str, code: str, timeout: float = 20) -> httpx.Response:
    with httpx.Client() as http:
        return execute(http, url, namespace, name, token, code, timeout)


@pytest.mark.timeout(240)
def test_the_execute_api_runs_code_for_those_allowed_and_no_one_else(cluster: ControlPlane, namespace: str) -> None:
    role = _session_user_role()
    alice, mallory = _user(namespace, "alice", role), _user(namespace, "mallory", None)
    _pool_account(namespace)
    pod = _pool_pod(namespace, f"{POOL_ACCOUNT}-sssss")
    crm_port, gateway_port = free_port(), free_port()
    _crm_server(namespace, crm_port)
    _ready_session(namespace, "work", pod, mcpServers=["crm"])
    with (
        demo_over_http(crm_port),
        SessionsGateway(cluster, gateway_port) as gateway,
        pool_runtime(_pod_token(namespace, pod), gateway_port) as (runtime, _workspace),
    ):
        url = gateway.people_url
        first = _execute(url, namespace, "work", alice, "x = 40\nprint('hello')")
        assert first.status_code == 200, first.text
        assert first.json()["stdout"] == "hello\n" and first.json()["error"] is None
        assert first.json()["durationMs"] >= 0
        # Variables persist; the session's tools are its policy's (the pool's ceiling).
        code = "print(x + 2)\nprint(call_tool('crm/get_customer', {'customer_id': 'C001'})['id'])"
        second = _execute(url, namespace, "work", alice, code)
        assert second.status_code == 200, second.text
        assert second.json()["stdout"] == "42\nC001\n"
        refused = _execute(url, namespace, "work", alice, "call_tool('crm/send_message', {})")
        assert "forbidden" in refused.json()["error"]
        # A session is no task: its sandbox has no task result to report.
        with gateway.client(_pod_token(namespace, pod)) as sandbox:
            report = sandbox.post("/v1/task/result", json={"phase": "Succeeded", "result": "x"})
            assert (report.status_code, report.json()["error"]["code"]) == (403, "forbidden"), report.text
        status = session_status(namespace, "work")
        assert status["lastActivity"] and status["usage"]["executions"] >= 1

        # No RBAC: 403; garbage or a dead account's token: 401; nothing runs.
        assert _execute(url, namespace, "work", mallory, "print(1)").status_code == 403
        assert _execute(url, namespace, "work", "garbage", "print(1)").status_code == 401
        doomed = _user(namespace, "doomed", role)
        client.CoreV1Api().delete_namespaced_service_account("doomed", namespace)
        wait_for(lambda: _execute(url, namespace, "work", doomed, "print(1)").status_code == 401, 30, "dead token 401")
        assert httpx.post(f"{url}/v1/sessions/{namespace}/work/execute", json={"code": "1"}).status_code == 401
        # Alice's token expired a minute ago: 401 (the same token re-signed with a live expiry still works).
        assert _execute(url, namespace, "work", _resigned(cluster, alice, 600), "print(1)").status_code == 200
        expired = _execute(url, namespace, "work", _resigned(cluster, alice, -60), "print(1)")
        assert expired.status_code == 401 and expired.json()["error"]["code"] == "unauthenticated", expired.text

        # Another namespace's session: alice's RoleBinding is in hers only.
        elsewhere = kube.create_namespace()
        try:
            create_session(elsewhere, "theirs", POOL)
            answer = _execute(url, elsewhere, "theirs", alice, "print(1)")
            assert (
                answer.status_code == 403 and "may not create agentsessions/exec" in answer.json()["error"]["message"]
            )
        finally:
            client.CoreV1Api().delete_namespace(elsewhere)

        # The sandbox port does not serve it, the people's port serves no sandbox API.
        assert httpx.post(f"{gateway.url}/v1/sessions/{namespace}/work/execute", json={"code": "1"}).status_code == 404
        assert httpx.get(f"{url}/v1/servers").status_code == 404

        # Ended: the claim is dropped, the runtime's session is over, and the API says so.
        client.CustomObjectsApi().patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, AGENTSESSION_PLURAL, "work", {"status": {"phase": "Ended", "reason": "Test"}}
        )
        ended = _execute(url, namespace, "work", alice, "print(1)")
        assert ended.status_code == 403 and ended.json()["error"]["code"] == "no_session"
        wait_for(lambda: runtime.poll() is not None, 60, "the runtime's session loop ended")


@pytest.mark.timeout(240)
def test_the_mcp_front_door_creates_a_session_for_its_client_and_deletes_it_after(
    cluster: ControlPlane, operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    role = _session_user_role()
    alice, mallory = _user(namespace, "alice", role), _user(namespace, "mallory", None)
    with _served_pool(cluster, namespace) as (gateway, pod):
        url = f"{gateway.people_url}/mcp/{namespace}/{POOL}"

        async def use(token: str) -> tuple[list[str], str, str]:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as mcp:
                tools = [t.name for t in (await mcp.list_tools()).tools]
                first = await mcp.call_tool("execute_code", {"code": "n = 2\nprint('ready')"})
                assert not first.is_error, first.content
                listed = client.CustomObjectsApi().list_namespaced_custom_object(
                    GROUP, VERSION, namespace, AGENTSESSION_PLURAL
                )["items"]
                second = await mcp.call_tool("execute_code", {"code": "print(n * 21)"})
                assert not second.is_error and second.structured_content is not None, second.content
                assert len(listed) == 1
                return tools, str(second.structured_content["stdout"]), str(listed[0]["metadata"]["name"])

        tools, stdout, name = asyncio.run(use(alice))
        assert "execute_code" in tools and "search_tools" in tools
        assert stdout == "42\n"
        assert name.startswith("mcp-")

        wait_for(lambda: _session_gone(namespace, name), 30, "the AgentSession deleted when the MCP client closed")
        wait_for(lambda: pod_gone(namespace, pod.metadata.name), 60, "the session's sandbox deleted with it")

        # Without the RBAC to create sessions: refused before any MCP is spoken.
        answer = httpx.post(url, json={}, headers={"Authorization": f"Bearer {mallory}"})
        assert answer.status_code == 403
        assert httpx.post(url, json={}, headers={"Authorization": "Bearer garbage"}).status_code == 401


@pytest.mark.timeout(240)
def test_an_mcp_session_answers_only_its_own_caller_on_its_own_path_delete_included(
    cluster: ControlPlane, operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    """Issue 31.6: a person with rights in another namespace (or another person here, or the same person on another
    pool's path) who learned an MCP session's id can neither end nor use it: 404, as for an id never given out; the
    session's own client goes on, and its DELETE ends it."""
    role = _session_user_role()
    alice, bob_here = _user(namespace, "alice", role), _user(namespace, "bob", role)
    elsewhere = kube.create_namespace()
    try:
        bob_there = _user(elsewhere, "bob", role)
        with _served_pool(cluster, namespace) as (gateway, _pod):
            url = f"{gateway.people_url}/mcp/{namespace}/{POOL}"
            intruders = [
                (bob_there, f"{gateway.people_url}/mcp/{elsewhere}/{POOL}"),
                (bob_here, url),
                (alice, f"{gateway.people_url}/mcp/{namespace}/another-pool"),
            ]

            async def use() -> str:
                ids: list[str] = []

                async def seen(response: httpx2.Response) -> None:
                    if key := response.headers.get("mcp-session-id"):
                        ids.append(key)

                http = httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {alice}"}, timeout=120, event_hooks={"response": [seen]}
                )
                async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as mcp:
                    first = await mcp.call_tool("execute_code", {"code": "n = 2"})
                    assert not first.is_error, first.content
                    (session,) = client.CustomObjectsApi().list_namespaced_custom_object(
                        GROUP, VERSION, namespace, AGENTSESSION_PLURAL
                    )["items"]
                    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "execute_code"}}
                    async with httpx.AsyncClient(timeout=30) as raw:
                        for token, path in intruders:
                            for method in ("DELETE", "POST", "GET"):
                                answer = await raw.request(
                                    method,
                                    path,
                                    json=call if method == "POST" else None,
                                    headers={
                                        "Authorization": f"Bearer {token}",
                                        "Mcp-Session-Id": ids[0],
                                        "Accept": "application/json, text/event-stream",
                                    },
                                )
                                assert answer.status_code == 404, (method, path, answer.status_code, answer.text)
                                assert answer.json()["error"]["code"] == "not_found"
                    name = str(session["metadata"]["name"])
                    assert session_status(namespace, name).get("phase") == "Ready"
                    second = await mcp.call_tool("execute_code", {"code": "print(n * 21)"})
                    assert not second.is_error and second.structured_content is not None, second.content
                    assert second.structured_content["stdout"] == "42\n"
                    return name

            name = asyncio.run(use())

            wait_for(lambda: _session_gone(namespace, name), 30, "the AgentSession deleted by its own client's DELETE")
    finally:
        client.CoreV1Api().delete_namespace(elsewhere)


STATELESS_VERSION = "2026-07-28"


@contextmanager
def _front_door(door: str, request: pytest.FixtureRequest, home: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A front door's URL and the headers its caller sends: the cluster's (a caller who may open sessions there), or
    `mcpexec serve --http` (no sandbox starts: nothing here gets as far as a tool call)."""
    if door == "cluster":
        cluster: ControlPlane = request.getfixturevalue("cluster")
        namespace: str = request.getfixturevalue("namespace")
        alice = _user(namespace, "alice", _session_user_role())
        with SessionsGateway(cluster, free_port()) as gateway:
            yield f"{gateway.people_url}/mcp/{namespace}/{POOL}", {"Authorization": f"Bearer {alice}"}
        return
    port = free_port()
    command = [sys.executable, "-m", "mcpexec.local.cli", "serve", "--http", str(port), "--unsafe-no-sandbox"]
    with listening(command, port, "mcpexec serve", env={**os.environ, "MCPEXEC_HOME": str(home)}, timeout=60):
        yield f"http://127.0.0.1:{port}/mcp", {}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("door", ["cluster", "local"])
def test_a_stateless_request_is_refused_with_a_reason(
    door: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A request without an Mcp-Session-Id that is not `initialize` is refused alike on both front doors
    (gateway/web/mcp_session_registry.py); a client that tries the stateless era first falls back to the handshake."""
    with _front_door(door, request, tmp_path) as (url, headers):

        async def modern() -> None:
            http = httpx2.AsyncClient(headers=headers, timeout=60)
            async with http, Client(streamable_http_client(url, http_client=http), mode=STATELESS_VERSION) as client:
                await client.call_tool("execute_code", {"code": "print(1)"})

        try:
            asyncio.run(modern())
        except Exception as exc:  # the SDK raises its MCPError (or a group holding it)
            assert "use the initialize handshake" in repr(exc) or "400" in repr(exc)
        else:
            raise AssertionError("a stateless request ran code without a session")

        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "execute_code", "arguments": {}}}
        sent = {**headers, "Accept": "application/json, text/event-stream"}
        stateless = httpx.post(url, json=call, headers={**sent, "Mcp-Protocol-Version": STATELESS_VERSION})
        assert stateless.status_code == 400 and stateless.json()["error"]["code"] == -32600, stateless.text
        assert "use the initialize handshake" in stateless.json()["error"]["message"]
        no_id = httpx.post(url, json=call, headers={**sent, "Mcp-Protocol-Version": LATEST_HANDSHAKE_VERSION})
        assert no_id.status_code == 400 and "Missing session ID" in no_id.text, no_id.text

        async def auto() -> str | None:
            http = httpx2.AsyncClient(headers=headers, timeout=60)
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                assert {tool.name for tool in (await client.list_tools()).tools} == {"execute_code", "search_tools"}
                return client.protocol_version

        assert asyncio.run(auto()) in HANDSHAKE_PROTOCOL_VERSIONS


@pytest.mark.timeout(240)
@pytest.mark.parametrize("door", ["cluster", "local"])
def test_an_mcp_session_id_never_given_out_is_not_found_on_both_doors(
    door: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A DELETE (or any request) naming an id that no `initialize` gave this caller is 404 with the contract's body,
    before the transport sees it; the door's sessions go on (gateway/web/mcp_session_registry.py)."""
    with _front_door(door, request, tmp_path) as (url, headers):
        sent = {**headers, "Accept": "application/json, text/event-stream", "Mcp-Session-Id": "0" * 32}
        for method in ("DELETE", "GET"):
            answer = httpx.request(method, url, headers=sent)
            assert answer.status_code == 404, (method, answer.text)
            assert answer.json()["error"]["code"] == "not_found"

        async def listed() -> set[str]:
            http = httpx2.AsyncClient(headers=headers, timeout=60)
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                return {tool.name for tool in (await client.list_tools()).tools}

        assert asyncio.run(listed()) == {"execute_code", "search_tools"}
