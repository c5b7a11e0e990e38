"""The chart's RBAC is enough: the operator and the gateway, run with exactly the ServiceAccounts and
ClusterRoles the chart renders, do their work against the real API server (and no more is granted)."""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from gateway.cluster.auth import ClusterAuthenticator
from gateway.cluster.claims import ClaimIndex
from gateway.cluster.directory import KubeDirectory
from gateway.cluster.server_status import ServerStatusReporter
from gateway.cluster.servers import ClusterServers
from gateway.cluster.task_reports import KubeTaskReports
from gateway.settings import Limits
from gateway.tools.catalog import Catalog, namespaced_server_key
from gateway.upstreams.pool import UpstreamPool
from mcpexec.api.meta import AGENTSESSION_PLURAL, AGENTTASK_PLURAL, GROUP, MCPSERVER_PLURAL, VERSION
from mcpexec.api.result import RuntimeResult
from tests.cluster.kube import create_task, job_pod, play_kubelet, task_status, wait_for, wait_phase
from tests.cluster.test_sessions import create_session, session_status
from tests.support.chart import render
from tests.support.components import REPO, demo_over_http, free_port
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask

RELEASE_NAMESPACE = "mcpexec-system"


def _apply_chart_rbac(*values: str) -> None:
    """The chart's ServiceAccounts, ClusterRoles and ClusterRoleBindings, created as rendered (with `values`, helm
    arguments such as `--set`)."""
    try:
        client.CoreV1Api().create_namespace({"metadata": {"name": RELEASE_NAMESPACE}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    rbac, core = client.RbacAuthorizationV1Api(), client.CoreV1Api()
    create = {
        "ServiceAccount": lambda d: core.create_namespaced_service_account(RELEASE_NAMESPACE, d),
        "ClusterRole": rbac.create_cluster_role,
        "ClusterRoleBinding": rbac.create_cluster_role_binding,
        "Role": lambda d: rbac.create_namespaced_role(RELEASE_NAMESPACE, d),
        "RoleBinding": lambda d: rbac.create_namespaced_role_binding(RELEASE_NAMESPACE, d),
    }
    for doc in render(*values):
        if doc["kind"] in create:
            try:
                create[doc["kind"]](doc)
            except ApiException as exc:
                if exc.status != 409:
                    raise


def _operator_container(*values: str) -> dict[str, Any]:
    docs = render(*values)
    (operator,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "rel-mcpexec-operator"]
    return dict(operator["spec"]["template"]["spec"]["containers"][0])


def _kubeconfig_for(cluster: ControlPlane, service_account: str, path: Path) -> Path:
    token = (
        client.CoreV1Api()
        .create_namespaced_service_account_token(
            service_account, RELEASE_NAMESPACE, {"spec": {"expirationSeconds": 3600}}
        )
        .status.token
    )
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    admin["users"] = [{"name": "admin", "user": {"token": token}}]
    path.write_text(yaml.safe_dump(admin))
    return path


_TIME = re.compile(r'"time":\s*"[^"]*"')


def _forbidden(log: str) -> list[str]:
    """The operator's log lines that tell of a 403, timestamps left out (a "09:06:09,403" is no refusal; kopf's
    own records are not all valid JSON, so the time field is cut out as text)."""
    untimed = (_TIME.sub("", line) for line in log.splitlines())
    return [line for line in untimed if "403" in line or "Forbidden" in line]


def test_operator_works_with_the_charts_rbac_only(cluster: ControlPlane, namespace: str, tmp_path: Path) -> None:
    _apply_chart_rbac()
    kubeconfig = _kubeconfig_for(cluster, "rel-mcpexec-operator", tmp_path / "operator.kubeconfig")
    operator_env = {e["name"]: e.get("value") for e in _operator_container()["env"]}
    env = {
        **cluster.env(),
        "KUBECONFIG": str(kubeconfig),
        "MCPEXEC_LIVENESS_ENDPOINT": f"http://127.0.0.1:{free_port()}/healthz",
        "MCPEXEC_METRICS_PORT": "0",
        "MCPEXEC_GATEWAY_NAMESPACE": RELEASE_NAMESPACE,
        "MCPEXEC_GENERATED_SECRETS": operator_env["MCPEXEC_GENERATED_SECRETS"],
        "MCPEXEC_RUN_RECORD_RETENTION_DAYS": operator_env["MCPEXEC_RUN_RECORD_RETENTION_DAYS"],
        "MCPEXEC_RUN_RECORD_SWEEP_INTERVAL_SECONDS": "1",  # the retention sweep lists records too
    }
    # The seal key exists already (an earlier start made it): it is kept as it is; the Redis password is made.
    core = client.CoreV1Api()
    for leftover in ("rel-mcpexec-redis", "rel-mcpexec-gateway-skills-seal"):
        try:
            core.delete_namespaced_secret(leftover, RELEASE_NAMESPACE)
        except ApiException as exc:
            if exc.status != 404:
                raise
    seal = {"metadata": {"name": "rel-mcpexec-gateway-skills-seal"}, "stringData": {"key": "k" * 48}}
    core.create_namespaced_secret(RELEASE_NAMESPACE, seal)
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "controller"], cwd=REPO, env=env, stdout=out, stderr=out)
        try:
            create_task(namespace, agenttask("rbac", skills={"owner": "team"}))
            status = wait_for(
                lambda: task_status(namespace, "rbac").get("jobName") and task_status(namespace, "rbac"),
                90,
                "task accepted under chart RBAC",
            )
            # An AgentSession too: its pool does not exist, so it waits, and says so in its status.
            create_session(namespace, "rbac", "missing")
            wait_for(lambda: session_status(namespace, "rbac").get("reason") == "SandboxPoolNotFound", 90, "session")
            # The run's outcome goes into its name's run record.
            play_kubelet(job_pod(namespace, "mcpexec-rbac"), "Succeeded", exit_code=0, message="done")
            wait_phase(namespace, "rbac", "Succeeded")
            record = wait_for(
                lambda: (core.read_namespaced_config_map("mcpexec-run.rbac", namespace).data or {}).get("phase"),
                30,
                "the run's outcome in its record",
            )
            time.sleep(2)  # a retention sweep or two
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert status["phase"] in ("Pending", "Running")
    assert record == "Succeeded"
    text = log.read_text()
    assert not _forbidden(text), text[-3000:]
    secrets = {s.metadata.name: s.data for s in core.list_namespaced_secret(RELEASE_NAMESPACE).items}
    assert base64.b64decode(secrets["rel-mcpexec-gateway-skills-seal"]["key"]) == b"k" * 48
    assert len(base64.b64decode(secrets["rel-mcpexec-redis"]["password"])) == 32


def test_operator_replicas_elect_a_leader_with_the_charts_rbac_only(
    cluster: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    replicas = ("--set", "operator.replicas=2")
    _apply_chart_rbac(*replicas)
    kubeconfig = _kubeconfig_for(cluster, "rel-mcpexec-operator", tmp_path / "operator.kubeconfig")
    operator_env = {e["name"]: e.get("value") for e in _operator_container(*replicas)["env"]}
    assert operator_env["MCPEXEC_LEADER_ELECTION"] == "true"
    env = {
        **cluster.env(),
        "KUBECONFIG": str(kubeconfig),
        "MCPEXEC_LIVENESS_ENDPOINT": f"http://127.0.0.1:{free_port()}/healthz",
        "MCPEXEC_METRICS_PORT": "0",
        "MCPEXEC_GATEWAY_NAMESPACE": RELEASE_NAMESPACE,
        "MCPEXEC_LEADER_ELECTION": operator_env["MCPEXEC_LEADER_ELECTION"],
    }
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "controller"], cwd=REPO, env=env, stdout=out, stderr=out)
        try:
            create_task(namespace, agenttask("elected"))
            wait_for(lambda: task_status(namespace, "elected").get("jobName"), 90, "task accepted by the leader")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    lease = client.CoordinationV1Api().read_namespaced_lease("mcpexec-operator", RELEASE_NAMESPACE)
    assert lease.spec.holder_identity.endswith(f"_{proc.pid}")
    text = log.read_text()
    assert not _forbidden(text), text[-3000:]


def test_gateway_resolves_tokens_with_the_charts_rbac_only(
    cluster: ControlPlane, namespace: str, tmp_path: Path, operator: Any
) -> None:
    _apply_chart_rbac()
    create_task(namespace, agenttask("caller"))
    wait_for(lambda: task_status(namespace, "caller").get("jobName"), 60, "task accepted")
    task_token = (
        client.CoreV1Api()
        .create_namespaced_service_account_token(
            "mcpexec-caller", namespace, {"spec": {"audiences": ["mcpexec-gateway"], "expirationSeconds": 600}}
        )
        .status.token
    )
    kubeconfig = _kubeconfig_for(cluster, "rel-mcpexec-gateway", tmp_path / "gateway.kubeconfig")
    directory = KubeDirectory(config.new_client_from_config(config_file=str(kubeconfig)))
    context = asyncio.run(
        ClusterAuthenticator(directory, "mcpexec-gateway", ClaimIndex(directory), cache_seconds=0).authenticate(
            task_token
        )
    )
    assert context.task.task_id == f"{namespace}/caller"
    # The task's own sandbox's result, recorded as its status.report (agenttasks/status: patch).
    assert asyncio.run(KubeTaskReports(directory).record(context, RuntimeResult(phase="Succeeded", result="rbac")))
    assert task_status(namespace, "caller")["report"]["result"] == "rbac"
    # Held calls' status (status.approvals, written guarded by the resourceVersion read) and their Events.
    document = directory.resource(AGENTTASK_PLURAL, namespace, "caller")
    body = {"metadata": {"resourceVersion": document["metadata"]["resourceVersion"]},
            "status": {"approvals": {"pending": [], "count": 0, "revision": 1}}}  # fmt: skip
    directory.patch_status(AGENTTASK_PLURAL, namespace, "caller", body, 10)
    assert task_status(namespace, "caller")["approvals"]["revision"] == 1
    event = {"metadata": {"generateName": "caller."}, "reason": "ApprovalRequested", "message": "rbac",
             "involvedObject": {"kind": "AgentTask", "name": "caller", "namespace": namespace}}  # fmt: skip
    directory.create_event(namespace, event)
    # The claim indexes: every AgentTask and AgentSession listed, then watched (a 403 would raise here).
    for plural in (AGENTTASK_PLURAL, AGENTSESSION_PLURAL):
        claims = ClaimIndex(directory, plural)
        asyncio.run(claims.load())
        directory.watch(plural, claims.resource_version, 1, lambda _kind, _document: None)
    # People's sessions: their rights asked of the API server; the front door's AgentSessions made, their activity
    # recorded, deleted.
    attributes = {"verb": "create", "group": GROUP, "resource": AGENTSESSION_PLURAL, "namespace": namespace}
    assert not directory.may({"username": "nobody", "groups": ["system:authenticated"]}, attributes)
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "AgentSession", "metadata": {"generateName": "mcp-"},
            "spec": {"poolRef": {"name": "none"}}}  # fmt: skip
    name = directory.create_session(namespace, body)["metadata"]["name"]
    directory.patch_session_status(namespace, name, {"lastActivity": "2026-01-01T00:00:00Z"})
    directory.delete_session(namespace, name)
    # And nothing beyond: the gateway cannot read Secrets unless headerSecrets is on.
    try:
        directory.secret_value(namespace, "anything", "key")
    except ApiException as exc:
        assert exc.status == 403
    else:
        raise AssertionError("the gateway could read Secrets")


def test_gateway_sees_mcpserver_changes_at_once_with_the_charts_rbac_only(
    cluster: ControlPlane, namespace: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A task applied together with its MCPServer finds it: the gateway's watch (the chart grants list and
    watch) re-lists on the change. The periodic refresh is set to 10 minutes, so only the watch can explain
    the server appearing, changing and going away within the test's bounds."""
    _apply_chart_rbac()
    kubeconfig = _kubeconfig_for(cluster, "rel-mcpexec-gateway", tmp_path / "gateway.kubeconfig")
    servers = ClusterServers(
        KubeDirectory(config.new_client_from_config(config_file=str(kubeconfig))), 600, frozenset()
    )
    custom = client.CustomObjectsApi()
    key = f"{namespace}/crm"
    where = (GROUP, VERSION, namespace, MCPSERVER_PLURAL)

    async def scenario() -> list[str | None]:
        await servers.refresh()
        follower = asyncio.create_task(servers.refresh_forever())
        seen: list[str | None] = [servers.specs()[key].url if key in servers.specs() else None]
        try:
            body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "MCPServer", "metadata": {"name": "crm"},
                    "spec": {"transport": "streamableHttp", "url": "http://crm-1.example:8080/mcp"}}  # fmt: skip
            changes = [
                ("http://crm-1.example:8080/mcp", lambda: custom.create_namespaced_custom_object(*where, body)),
                ("http://crm-2.example:8080/mcp", lambda: custom.patch_namespaced_custom_object(
                    *where, "crm", {"spec": {"url": "http://crm-2.example:8080/mcp"}})),
                (None, lambda: custom.delete_namespaced_custom_object(*where, "crm")),
            ]  # fmt: skip
            for url, change in changes:
                change()
                for _ in range(300):  # 30 s at most, far below the 10-minute refresh
                    spec = servers.specs().get(key)
                    if (spec.url if spec else None) == url:
                        break
                    await asyncio.sleep(0.1)
                spec = servers.specs().get(key)
                seen.append(spec.url if spec else None)
        finally:
            follower.cancel()
        return seen

    with caplog.at_level(logging.INFO, logger="mcpexec.gateway.servers"):
        seen = asyncio.run(scenario())
    # The watch's own logger only: other tests' gateways (threads in this process) may log their servers.
    servers_log = [r for r in caplog.records if r.name == "mcpexec.gateway.servers"]
    assert not [r.getMessage() for r in servers_log if r.levelno >= logging.WARNING]
    assert seen == [
        None, "http://crm-1.example:8080/mcp", "http://crm-2.example:8080/mcp", None,
    ]  # fmt: skip


def test_gateway_reports_mcpserver_status_with_the_charts_rbac_only(
    cluster: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """Ready and the discovered tools land in MCPServer status (our demo server over streamable HTTP, and a URL
    nothing listens on); a second round with nothing changed writes nothing."""
    _apply_chart_rbac()
    kubeconfig = _kubeconfig_for(cluster, "rel-mcpexec-gateway", tmp_path / "gateway.kubeconfig")
    directory = KubeDirectory(config.new_client_from_config(config_file=str(kubeconfig)))
    custom = client.CustomObjectsApi()
    port, nobody = free_port(), free_port()
    for name, url in (("crm", f"http://127.0.0.1:{port}/mcp"), ("down", f"http://127.0.0.1:{nobody}/mcp")):
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "MCPServer", "metadata": {"name": name},
                "spec": {"transport": "streamableHttp", "url": url}}  # fmt: skip
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, MCPSERVER_PLURAL, body)

    def read(name: str) -> dict[str, Any]:
        return dict(custom.get_namespaced_custom_object(GROUP, VERSION, namespace, MCPSERVER_PLURAL, name))

    async def scenario() -> tuple[tuple[int, int, int, int], dict[str, Any], dict[str, Any]]:
        servers = ClusterServers(directory, 600, frozenset())
        await servers.refresh()
        pool = UpstreamPool(servers.specs, Limits().max_result_bytes, servers.headers)
        reporter = ServerStatusReporter(directory, servers, Catalog(pool, namespaced_server_key, wait=5))
        try:
            with demo_over_http(port):
                first = await reporter.report_once()
                again = await reporter.report_once()
                await servers.refresh()  # as another replica would see it: the statuses as the API has them
                after_relist = await reporter.report_once()
                crm, down = read("crm")["status"], read("down")["status"]
            gone = await reporter.report_once()  # the server stopped: it is probed, not answered from a cache
        finally:
            await pool.close()
        return (first, again, after_relist, gone), crm, down

    patched, crm, down = asyncio.run(scenario())
    assert patched == (2, 0, 0, 1)
    stopped = read("crm")["status"]
    assert stopped["conditions"][0]["status"] == "False", stopped
    assert crm["conditions"][0]["status"] == "True" and crm["conditions"][0]["reason"] == "ToolsListed"
    assert crm["toolCount"] == 5
    assert {t["name"] for t in crm["tools"]} == {
        "list_customers", "get_customer", "search_customers", "send_message", "sent_messages",
    }  # fmt: skip
    assert crm["conditions"][0]["lastTransitionTime"]
    assert down["conditions"][0]["status"] == "False" and down["conditions"][0]["reason"] == "Unreachable"
    assert "toolCount" not in down
