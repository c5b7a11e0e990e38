"""Approval of tool calls on the node (issue 33, docs/approvals.md): two pooled tasks (warm gVisor sandboxes of a
SandboxPool) call `send_message` of our demo MCP server, whose MCPServer asks for approval of `send_*`. Each call is
held by the gateway: the task's status shows AwaitingApproval and the pending call with its arguments as tokens, and
the tool has received nothing. A person bound to the chart's approver ClusterRole, with their own token in their
kubeconfig, answers with `kubectl mcpexec` (the console script `kubectl-mcpexec` from pyproject.toml, run by the real
kubectl as its plugin) on a gateway replica's people port: one call approved, the other denied. The approved call
reaches the tool once, with the real address; the denied one never does, and its code gets ApprovalDenied with the
reason. A session user (no approver right) is refused."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.cluster.kube import task_status, wait_for
from tests.e2e.node import Node
from tests.e2e.node_artifacts import kubectl_binary
from tests.e2e.release import API_VERSION, GROUP, PLURAL, crm_server, sent_messages, wait_task
from tests.e2e.sessions import APPROVER_ROLE, SESSION_USER_ROLE, create_pool, gateway_urls, session_user, wait_pool
from tests.e2e.test_pools import TEMPLATE
from tests.support.approval_code import RAW_EMAIL, sends
from tests.support.components import REPO

pytestmark = pytest.mark.e2e

POOL = "approvals"
PLUGIN = "kubectl-mcpexec"


def _install_plugin(directory: Path) -> Path:
    """`kubectl-mcpexec` as `pip install mcpexec` makes it from pyproject.toml's [project.scripts] entry (the shared
    venv predates it), in `directory`, for kubectl to find on PATH."""
    module, function = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"][PLUGIN].split(":")
    script = directory / PLUGIN
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n")
    script.chmod(0o755)
    return directory


def _kubeconfig(e2e_node: Node, directory: Path, token: str) -> Path:
    """The node's kubeconfig with a person's own token as its user's credential."""
    config = yaml.safe_load(e2e_node.cp.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


class Person:
    """Someone running `kubectl mcpexec` with their own kubeconfig against a gateway replica's people port."""

    def __init__(self, plugins: Path, kubeconfig: Path, namespace: str, gateway: str) -> None:
        self._env = {**os.environ, "PATH": f"{plugins}:{os.environ['PATH']}", "KUBECONFIG": str(kubeconfig)}
        self._args = [str(kubectl_binary()), "mcpexec", "-n", namespace, "--gateway", gateway]

    def kubectl_mcpexec(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self._args, *args], env=self._env, capture_output=True, text=True, timeout=60)


def _person(e2e_node: Node, tmp_path: Path, plugins: Path, namespace: str, name: str, role: str) -> Person:
    home = tmp_path / name
    home.mkdir()
    token = session_user(namespace, name, role)
    return Person(plugins, _kubeconfig(e2e_node, home, token), namespace, gateway_urls()[0])


def _awaiting(status: dict[str, Any]) -> tuple[str, str] | None:
    found = next((c for c in status.get("conditions") or [] if c["type"] == "AwaitingApproval"), None)
    return (found["status"], found["reason"]) if found else None


def _held(namespace: str, name: str, count: int) -> dict[str, Any]:
    """The task's status once the gateway shows `count` held calls in it, and the condition saying so."""
    condition = ("True", "CallsHeld") if count else ("False", "NoCallHeld")

    def shown() -> dict[str, Any] | None:
        status = task_status(namespace, name)
        held = (status.get("approvals") or {}).get("count")
        return status if held == count and _awaiting(status) == condition else None

    return wait_for(shown, 180, f"{count} held call(s) in {name}'s status")


def _task_events(core: client.CoreV1Api, namespace: str) -> set[str]:
    return {e.reason for e in core.list_namespaced_event(namespace).items if e.involved_object.kind == "AgentTask"}


def test_a_pooled_tasks_held_call_runs_once_when_kubectl_mcpexec_approves_it_and_never_when_denied(
    e2e_node: Node, release: str, core: client.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    custom = client.CustomObjectsApi()
    crm_ip = crm_server(core, custom, namespace, approval={"tools": ["send_*"]})
    outbox = f"http://{crm_ip}:8080/mcp"
    create_pool(namespace, POOL, 2, TEMPLATE)
    plugins = tmp_path / "bin"
    plugins.mkdir()
    _install_plugin(plugins)
    carol = _person(e2e_node, tmp_path, plugins, namespace, "carol", APPROVER_ROLE)
    alice = _person(e2e_node, tmp_path, plugins, namespace, "alice", SESSION_USER_ROLE)  # no right to approve
    wait_pool(namespace, POOL, 2)
    for name in ("approved", "denied"):
        task = {
            "apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": name},
            "spec": {"poolRef": {"name": POOL}, "mcpServers": ["crm"], "timeoutSeconds": 240, "code": sends("crm")},
        }  # fmt: skip
        custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL, task)

    digests = {}
    for name in ("approved", "denied"):
        status = _held(namespace, name, 1)
        assert status["launchType"] == "Warm", status
        (pending,) = status["approvals"]["pending"]
        assert pending["tool"] == "crm/send_message" and '"to": "[EMAIL_1]"' in pending["arguments"], pending
        assert RAW_EMAIL not in json.dumps(status), status
        digests[name] = pending["digest"]
    assert digests["approved"] != digests["denied"]
    assert asyncio.run(sent_messages(outbox)) == [], "a held call has not run"

    listed = carol.kubectl_mcpexec("pending", "approved")
    assert listed.returncode == 0, listed.stderr
    assert f"{digests['approved'][:12]}  crm/send_message" in listed.stdout and "[EMAIL_1]" in listed.stdout
    assert RAW_EMAIL not in listed.stdout
    refused = alice.kubectl_mcpexec("approve", "approved", digests["approved"])
    assert refused.returncode == 1 and "forbidden (403)" in refused.stderr, refused.stderr
    assert f"may not create agenttasks/approve 'approved' in namespace {namespace}" in refused.stderr

    approver = f"system:serviceaccount:{namespace}:carol"
    approved = carol.kubectl_mcpexec("approve", "approved", digests["approved"][:12])
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout == f"crm/send_message {digests['approved'][:12]} approved by {approver}\n"
    denied = carol.kubectl_mcpexec("deny", "denied", digests["denied"][:12], "--reason", "not this quarter")
    assert denied.returncode == 0, denied.stderr
    assert denied.stdout == f"crm/send_message {digests['denied'][:12]} denied by {approver}\n"

    done = wait_task(custom, "approved", namespace, timeout=180)["status"]
    assert (done["phase"], done["result"]) == ("Succeeded", "sent sent\n"), done
    refused_run = wait_task(custom, "denied", namespace, timeout=180)["status"]
    assert (refused_run["phase"], refused_run["result"]) == ("Succeeded", "denied: not this quarter\n"), refused_run
    # The tool got the real address, once: the approved call ran once, the denied one never.
    assert [message["to"] for message in asyncio.run(sent_messages(outbox))] == [RAW_EMAIL]
    _held(namespace, "approved", 0)
    events = {"ApprovalRequested", "CallApproved", "CallDenied"}
    wait_for(lambda: events <= _task_events(core, namespace), 30, f"the Events {events}")
