"""What GitOps tools make of our objects, judged by their own code on what the real operator and gateway wrote on the
real API server: kstatus (cli-utils and Flux's fork), Flux's CEL health evaluator with our healthCheckExprs, Argo
CD's Lua runtime with our health scripts (tests/support/gitops.py); `kubectl wait` on the conditions; kopf's
bookkeeping next to a large spec applied client-side."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf.testing
import pytest
import yaml
from kubernetes import client

from gateway.cluster.directory import KubeDirectory
from gateway.cluster.server_status import ServerStatusReporter
from gateway.cluster.servers import ClusterServers
from gateway.settings import Limits
from gateway.tools.catalog import Catalog, namespaced_server_key
from gateway.upstreams.pool import UpstreamPool
from mcpexec.api.meta import AGENTTASK_PLURAL, GROUP, MCPSERVER_PLURAL, VERSION
from tests.cluster.kube import (
    condition,
    create_task,
    job_pod,
    kubectl,
    play_kubelet,
    read_task,
    task_status,
    wait_for,
    wait_phase,
)
from tests.support.components import demo_over_http, free_port
from tests.support.control_plane import ControlPlane
from tests.support.gitops import judge
from tests.support.malformed import agenttask

IN_PROGRESS = ("InProgress", "InProgress", "InProgress", "Progressing")
CURRENT = ("Current", "Current", "Current", "Healthy")
FAILED = ("Failed", "Failed", "Failed", "Degraded")
# An unreachable server: the gateway keeps probing (kstatus and Flux wait for it), Argo CD shows it Degraded.
UNREACHABLE = ("InProgress", "InProgress", "InProgress", "Degraded")


def _started(namespace: str, name: str, **spec: Any) -> Any:
    create_task(namespace, agenttask(name, **spec))
    wait_for(lambda: task_status(namespace, name).get("jobName"), what=f"{name} accepted")
    return job_pod(namespace, f"mcpexec-{name}")


def _finished(namespace: str, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: (t := read_task(namespace, name)).get("status", {}).get("completionTime") and t, 60, f"{name} finished"
    )


def test_a_task_reads_in_progress_while_active_current_on_success_failed_on_failure(
    operator: kopf.testing.KopfRunner, namespace: str
) -> None:
    objects: dict[str, dict[str, Any]] = {}
    # As created: the CRD's status default (observedGeneration 0) is there on the first read, status subresource on.
    fresh = create_task(namespace, agenttask("fresh", runtimeClassName="not-yet"))
    assert fresh["status"] == {"observedGeneration": 0, "phase": "Pending"}
    objects["fresh"] = fresh
    objects["waiting"] = wait_for(
        lambda: (t := read_task(namespace, "fresh")).get("status", {}).get("observedGeneration") and t, 60, "waiting"
    )
    pod = _started(namespace, "pending")
    objects["pending"] = read_task(namespace, "pending")
    play_kubelet(pod, "Running")
    wait_phase(namespace, "pending", "Running")
    objects["running"] = read_task(namespace, "pending")
    play_kubelet(pod, "Succeeded", exit_code=0, message="done")
    wait_phase(namespace, "pending", "Succeeded")
    objects["succeeded"] = read_task(namespace, "pending")
    play_kubelet(_started(namespace, "boom"), "Failed", exit_code=1, message="ZeroDivisionError")
    objects["failed"] = _finished(namespace, "boom")
    play_kubelet(_started(namespace, "slow", timeoutSeconds=2), "Running")
    objects["timed-out"] = wait_for(
        lambda: (t := read_task(namespace, "slow"))["status"]["phase"] == "TimedOut" and t, 60, "timed out"
    )
    create_task(namespace, agenttask("badre", pii={"customPatterns": [{"name": "T", "regex": r"(a)\1"}]}))
    objects["invalid"] = _finished(namespace, "badre")
    client.CustomObjectsApi().delete_namespaced_custom_object(GROUP, VERSION, namespace, AGENTTASK_PLURAL, "pending")
    wait_for(lambda: not _exists(namespace, "pending"), 30, "task deleted")
    create_task(namespace, agenttask("pending"))
    objects["already-ran"] = _finished(namespace, "pending")

    reasons = {name: condition(o["status"], "Succeeded")["reason"] for name, o in objects.items() if name != "fresh"}
    assert reasons == {
        "waiting": "RuntimeClassNotFound", "pending": "Pending", "running": "Running", "succeeded": "Succeeded",
        "failed": "Failed", "timed-out": "DeadlineExceeded", "invalid": "InvalidSpec", "already-ran": "AlreadyRan",
    }  # fmt: skip
    verdicts = dict(zip(objects, judge(list(objects.values())), strict=True))
    expected = {
        "fresh": IN_PROGRESS, "waiting": IN_PROGRESS, "pending": IN_PROGRESS, "running": IN_PROGRESS,
        "succeeded": CURRENT, "already-ran": CURRENT, "failed": FAILED, "timed-out": FAILED, "invalid": FAILED,
    }  # fmt: skip
    assert {name: v.statuses() for name, v in verdicts.items()} == expected
    assert "does not exist" in verdicts["waiting"].kstatus.message
    assert verdicts["failed"].argo.message.startswith("Failed: ")
    assert "DeadlineExceeded" in verdicts["timed-out"].argo.message


def _exists(namespace: str, name: str) -> bool:
    try:
        read_task(namespace, name)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers: a probe of it waits."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


def _server(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "MCPServer", "metadata": {"name": name}, "spec": spec}
    created: dict[str, Any] = client.CustomObjectsApi().create_namespaced_custom_object(
        GROUP, VERSION, namespace, MCPSERVER_PLURAL, body
    )
    return created


def _read_server(namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi().get_namespaced_custom_object(
        GROUP, VERSION, namespace, MCPSERVER_PLURAL, name
    )
    return found


def test_an_mcpserver_reads_as_the_gateway_sees_it(cluster: ControlPlane, namespace: str, silent_port: int) -> None:
    """Probing (Ready Unknown), served (Ready), unreachable, refused (a stdio server outside the trusted namespaces,
    a spec only the gateway refuses), and edited since the gateway last looked."""
    port, nobody = free_port(), free_port()
    objects: dict[str, dict[str, Any]] = {}
    objects["fresh"] = _server(namespace, "crm", {"transport": "streamableHttp", "url": f"http://127.0.0.1:{port}/mcp"})
    assert objects["fresh"]["status"] == {"observedGeneration": 0}
    _server(namespace, "down", {"transport": "streamableHttp", "url": f"http://127.0.0.1:{nobody}/mcp"})
    _server(namespace, "silent", {"transport": "streamableHttp", "url": f"http://127.0.0.1:{silent_port}/mcp"})
    _server(namespace, "tools", {"transport": "stdio", "command": ["mcp-server-time"]})
    bad_pattern = {"customPatterns": [{"name": "T", "regex": r"(a)\1"}]}
    _server(namespace, "badre", {"transport": "streamableHttp", "url": "http://crm.example/mcp", "pii": bad_pattern})

    async def scenario() -> None:
        servers = ClusterServers(KubeDirectory(client.ApiClient()), 600, frozenset())
        await servers.refresh()
        pool = UpstreamPool(servers.specs, Limits().max_result_bytes, servers.headers)
        reporter = ServerStatusReporter(
            KubeDirectory(client.ApiClient()), servers, Catalog(pool, namespaced_server_key, wait=5)
        )
        try:
            with demo_over_http(port):
                round_ = asyncio.create_task(reporter.report_once())
                for _ in range(100):  # the silent server's probe waits: its first-seen status is there meanwhile
                    status = (await asyncio.to_thread(_read_server, namespace, "silent")).get("status") or {}
                    if status.get("conditions"):
                        objects["probing"] = await asyncio.to_thread(_read_server, namespace, "silent")
                        break
                    await asyncio.sleep(0.1)
                await round_
                objects["ready"] = _read_server(namespace, "crm")
        finally:
            await pool.close()

    asyncio.run(scenario())
    objects["unreachable"] = _read_server(namespace, "down")
    objects["not-served"] = _read_server(namespace, "tools")
    objects["invalid"] = _read_server(namespace, "badre")
    client.CustomObjectsApi().patch_namespaced_custom_object(
        GROUP, VERSION, namespace, MCPSERVER_PLURAL, "crm", {"spec": {"description": "the CRM"}}
    )
    objects["edited"] = _read_server(namespace, "crm")

    ready = {name: condition(o["status"], "Ready") for name, o in objects.items() if name not in ("fresh",)}
    assert {name: (c["status"], c["reason"]) for name, c in ready.items()} == {
        "probing": ("Unknown", "Probing"), "ready": ("True", "ToolsListed"), "unreachable": ("False", "Unreachable"),
        "not-served": ("False", "NotServed"), "invalid": ("False", "InvalidSpec"), "edited": ("True", "ToolsListed"),
    }  # fmt: skip
    assert objects["edited"]["metadata"]["generation"] == 2 and objects["edited"]["status"]["observedGeneration"] == 1
    assert "toolCount" not in objects["not-served"]["status"]
    verdicts = dict(zip(objects, judge(list(objects.values())), strict=True))
    assert {name: v.statuses() for name, v in verdicts.items()} == {
        "fresh": IN_PROGRESS, "probing": IN_PROGRESS, "ready": CURRENT, "unreachable": UNREACHABLE,
        "not-served": FAILED, "invalid": FAILED, "edited": IN_PROGRESS,
    }  # fmt: skip
    assert (
        "NotServed" in verdicts["not-served"].argo.message
        and "stdioServerNamespaces" in verdicts["not-served"].argo.message
    )


def _wait(
    cluster: ControlPlane, namespace: str, name: str, condition_: str, seconds: int
) -> subprocess.CompletedProcess[str]:
    return kubectl(
        cluster, "wait", "-n", namespace, f"agenttask/{name}", f"--for=condition={condition_}", f"--timeout={seconds}s"
    )


def test_kubectl_wait_returns_on_success_and_on_failure(
    operator: kopf.testing.KopfRunner, cluster: ControlPlane, namespace: str
) -> None:
    """`--for=condition=Succeeded` waits for success, `=false` returns as soon as the task failed (fail fast), and
    `Finished` returns either way."""
    ok, boom = _started(namespace, "ok"), _started(namespace, "boom")
    assert _wait(cluster, namespace, "ok", "Succeeded", 1).returncode != 0, "not yet"
    play_kubelet(ok, "Succeeded", exit_code=0, message="done")
    play_kubelet(boom, "Failed", exit_code=1, message=json.dumps({"phase": "Failed", "result": "", "error": "boom"}))
    for name, wanted in (("ok", "Succeeded"), ("boom", "Succeeded=false"), ("ok", "Finished"), ("boom", "Finished")):
        done = _wait(cluster, namespace, name, wanted, 60)
        assert done.returncode == 0, (name, wanted, done.stderr)
        assert "condition met" in done.stdout
    assert _wait(cluster, namespace, "ok", "Succeeded=false", 1).returncode != 0


def test_a_large_spec_applied_client_side_is_handled(
    operator: kopf.testing.KopfRunner, cluster: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    """140 KB of code under `kubectl apply` (client-side: its last-applied annotation copies the spec): kopf's own
    diff base must not copy it again, or all annotations together pass the API server's 256 KiB and every later
    patch of the task fails."""
    code = "# padding\n" * 14_000 + "print('large')\n"
    manifest = tmp_path / "large.yaml"
    manifest.write_text(
        yaml.safe_dump(agenttask("large", code=code) | {"metadata": {"name": "large", "namespace": namespace}})
    )
    applied = kubectl(cluster, "apply", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    play_kubelet(job_pod(namespace, "mcpexec-large"), "Succeeded", exit_code=0, message="done")
    done = wait_phase(namespace, "large", "Succeeded")
    assert condition(done, "Succeeded")["status"] == "True"
    annotations = read_task(namespace, "large")["metadata"]["annotations"]
    ours = {key: value for key, value in annotations.items() if key.startswith(f"{GROUP}/")}
    assert sum(map(len, ours.values())) < 2_000, ours  # tasks are started from events: kopf keeps no diff base on them
    assert len(annotations["kubectl.kubernetes.io/last-applied-configuration"]) > 140_000


def test_kubectl_explain_prints_every_description(cluster: ControlPlane) -> None:
    """The API server publishes the CRDs' descriptions (OpenAPI v3): the root's and every field's."""
    root = kubectl(cluster, "explain", "agenttask")
    assert root.returncode == 0, root.stderr
    assert "Code run once in a gVisor sandbox" in root.stdout and "<empty>" not in root.stdout
    status = kubectl(cluster, "explain", "agenttask.status.conditions.reason")
    assert "Why, in CamelCase" in status.stdout
    for path, text in {
        "agenttask.spec.maxTurns": "The most model turns",
        "agenttask.status.usage.tokensIn": "Prompt tokens",
        "mcpserver.status.observedGeneration": "The metadata.generation this status describes",
        "mcpserver.spec.headersFromSecrets.secretKeyRef.key": "The key in the Secret's data",
        "sandboxpool.status.templateHash": "The hash of the template",
        "agentsession.status.lastActivity": "The last execution the gateway ran",
    }.items():
        explained = kubectl(cluster, "explain", path)
        assert explained.returncode == 0 and text in explained.stdout, (path, explained.stdout, explained.stderr)
