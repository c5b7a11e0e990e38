"""The chart on the node: helm installs it (the project's images imported, Redis on the host), and an
AgentTask applied like a user would runs as the operator's Job under gVisor; its result lands in
AgentTask.status; deleting the task removes its Job and pod."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from runtime.contract import SANDBOX_UID
from tests.e2e.node import Node
from tests.e2e.node_artifacts import PROJECT_VERSION, kubectl_binary
from tests.e2e.node_network import host_ip
from tests.e2e.pods import pod, run_to_completion
from tests.e2e.release import API_VERSION, GROUP, PLURAL, VAULT, crm_server, gateway_records, sent_messages, wait_task

pytestmark = pytest.mark.e2e


def test_a_direct_code_task_runs_under_gvisor_and_its_result_lands_in_status(e2e_node: Node, release: str) -> None:
    task = {
        "apiVersion": f"{GROUP}/{API_VERSION}",
        "kind": "AgentTask",
        "metadata": {"name": "hello"},
        "spec": {"timeoutSeconds": 60, "code": "import platform\nprint('kernel:', platform.release())\n"},
    }
    kubectl = [str(kubectl_binary()), "--kubeconfig", str(e2e_node.cp.kubeconfig)]
    started = time.monotonic()
    subprocess.run([*kubectl, "apply", "-n", "default", "-f", "-"], input=json.dumps(task), text=True, check=True)
    custom = client.CustomObjectsApi()
    done = wait_task(custom, "hello")
    print(f"AgentTask Succeeded after {time.monotonic() - started:.1f}s")
    status = done["status"]
    assert status["phase"] == "Succeeded", status
    assert "gvisor" in status["result"], status
    job = client.BatchV1Api().read_namespaced_job(status["jobName"], "default")
    assert job.spec.template.spec.runtime_class_name == "gvisor"

    custom.delete_namespaced_custom_object(GROUP, API_VERSION, "default", PLURAL, "hello")
    deadline = time.monotonic() + 60
    while True:
        try:
            client.BatchV1Api().read_namespaced_job(status["jobName"], "default")
        except ApiException as exc:
            assert exc.status == 404
            break
        assert time.monotonic() < deadline, "the task's Job outlived the task"
        time.sleep(0.5)
    pods = client.CoreV1Api().list_namespaced_pod("default", label_selector=f"job-name={status['jobName']}")
    deadline = time.monotonic() + 60
    while pods.items:
        assert time.monotonic() < deadline, [p.metadata.name for p in pods.items]
        time.sleep(0.5)
        pods = client.CoreV1Api().list_namespaced_pod("default", label_selector=f"job-name={status['jobName']}")


PROBES = """
import os, socket, urllib.parse
def reach(host, port):
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        return "open"
    except OSError:
        return "closed"
gateway = urllib.parse.urlsplit(os.environ.get("MCPEXEC_GATEWAY_URL", "http://{gateway}"))
targets = [("gateway", gateway.hostname, gateway.port)] + {targets!r}
print("reach:", " ".join(f"{{name}}={{reach(host, port)}}" for name, host, port in targets))
"""

TOOL_CODE = """
from servers.crm import get_customer, send_message
alice = get_customer(customer_id="C001")
print("customer:", alice["name"], alice["email"], alice["phone"], alice["iban"])
print("sent:", send_message(to=alice["email"], subject="Invoice", body="Your invoice is ready")["to"])
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(8) as pool:  # the runtime opens a connection to the gateway per thread
    print("threads:", sorted(set(pool.map(lambda _: get_customer(customer_id="C001")["email"], range(8)))))
"""
THREADED_CALLS = 8


def _audit_records_by_replica(core: client.CoreV1Api, release: str, task_id: str) -> dict[str, int]:
    """Per gateway pod, how many tool calls of `task_id` its audit log holds."""

    def call(record: dict[str, Any]) -> bool:
        return record.get("message") == "audit" and record.get("task") == task_id and record.get("action") == "call"

    return {name: sum(map(call, records)) for name, records in gateway_records(core, release).items()}


def test_a_task_calls_a_real_mcp_server_through_the_gateway_and_reaches_nothing_else(
    e2e_node: Node, release: str, core: client.CoreV1Api, namespace: str
) -> None:
    """The whole path on the node: the operator's Job under gVisor -> its NetworkPolicy -> the gateway
    (TokenReview) -> an MCPServer served by a pod (our demo server, streamable HTTP) -> PII tokenized in the
    vault -> status.result. From the same pod, nothing but the gateway answers; a pod without the task's
    policy reaches the MCP server and the API server (so "closed" is the policy, not a dead target), but not
    the gateway, which admits task pods only, nor its ops port (metrics, docs), nor the vault, which admits the
    gateway only."""
    custom = client.CustomObjectsApi()
    crm_ip = crm_server(core, custom, namespace)
    api_port = e2e_node.cp.url.rsplit(":", 1)[1]
    targets = [
        ("crm-service", f"crm.{namespace}.svc.cluster.local", 8080),
        ("crm-pod", crm_ip, 8080),
        ("api-service", "10.96.0.1", 443),
        ("api-node", host_ip(), api_port),
        ("gateway-ops", f"mcpexec-gateway.{release}.svc.cluster.local", 9090),
        ("vault", VAULT, 6379),
    ]
    probes = PROBES.format(gateway=f"mcpexec-gateway.{release}.svc.cluster.local:8000", targets=targets)

    task = {
        "apiVersion": f"{GROUP}/{API_VERSION}",
        "kind": "AgentTask",
        "metadata": {"name": "crm-report"},
        "spec": {"timeoutSeconds": 120, "mcpServers": ["crm"], "code": TOOL_CODE + probes},
    }
    kubectl = [str(kubectl_binary()), "--kubeconfig", str(e2e_node.cp.kubeconfig)]
    subprocess.run([*kubectl, "apply", "-n", namespace, "-f", "-"], input=json.dumps(task), text=True, check=True)
    status = wait_task(custom, "crm-report", namespace)["status"]
    assert status["phase"] == "Succeeded", status
    result = status["result"]
    assert "customer: Alice Martin [EMAIL_1] [PHONE_1] [IBAN_1]" in result, result
    assert "sent: [EMAIL_1]" in result, result
    assert "threads: ['[EMAIL_1]']" in result, result
    assert "alice.martin@example.com" not in result and "202-555-0143" not in result
    assert status["usage"]["toolCalls"] == 2 + THREADED_CALLS, status
    # Every call, over 9 connections, reached the one replica that holds the task's session (Service affinity).
    by_replica = _audit_records_by_replica(core, release, f"{namespace}/crm-report")
    assert len(by_replica) == 2 and sorted(by_replica.values()) == [0, 2 + THREADED_CALLS], by_replica
    # The gateways report the server in its status (every 15 s): Ready, and the tools they discovered.
    deadline = time.monotonic() + 60
    while True:
        server_status = custom.get_namespaced_custom_object(GROUP, API_VERSION, namespace, "mcpservers", "crm")
        ready = server_status.get("status", {}).get("conditions", [{}])[0].get("status")
        if ready == "True" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert server_status["status"]["toolCount"] == 5, server_status.get("status")
    # The tool itself got the real address back (asked from the host, which the pod network lets in).
    outbox = asyncio.run(sent_messages(f"http://{crm_ip}:8080/mcp"))
    assert [m["to"] for m in outbox] == ["alice.martin@example.com"], outbox
    reach = " ".join(f"{name}=closed" for name, _, _ in targets)
    assert f"reach: gateway=open {reach}" in result, result

    control = pod("control", "", runtime_class="gvisor")
    control["spec"]["containers"][0].update(
        image=f"docker.io/mcpexec/runtime:{PROJECT_VERSION}", command=["python3", "-c", probes], args=None
    )
    opened = " ".join(f"{name}=open" for name, _, _ in targets if name not in ("gateway-ops", "vault"))
    # ...but not the gateway (it takes task pods only), its ops port (metrics and docs: the scrapers of the release's
    # namespace only) nor the vault (the gateway only): the chart's policies.
    control_reach = run_to_completion(core, namespace, control)
    assert f"reach: gateway=closed {opened} gateway-ops=closed vault=closed" in control_reach


SAVE_SKILL = """
def customers_on_plan(plan):
    \"\"\"Names of the customers on one plan.\"\"\"
    return [c["name"] for c in call_tool("crm/list_customers", {"plan": plan})["customers"]]

save_skill("customers_on_plan", customers_on_plan, "Names of the customers on a plan (crm).")
print("saved:", [s["name"] for s in list_skills()])
"""
REUSE_SKILL = """
print("enterprise:", load_skill("customers_on_plan").customers_on_plan("enterprise"))
"""


def test_skills_saved_by_one_task_are_loaded_by_the_next_from_the_pvc(
    e2e_node: Node, release: str, core: client.CoreV1Api, namespace: str
) -> None:
    """The operator's skills PVC (no provisioner on this node: the test makes a hostPath PV for it) keeps a skill
    one task saved; a read-only task of the same owner loads and runs it."""
    custom = client.CustomObjectsApi()
    crm_server(core, custom, namespace)
    volume = Path(tempfile.mkdtemp(prefix="mcpexec-e2e-skills-"))
    os.chown(volume, SANDBOX_UID, SANDBOX_UID)  # a hostPath is not chowned to the pod's fsGroup
    pv = f"skills-{namespace}"
    core.create_persistent_volume({
        "metadata": {"name": pv},
        "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": str(volume), "type": "Directory"},
            "claimRef": {"namespace": namespace, "name": "skills-crm-team"},
        },
    })  # fmt: skip
    try:
        kubectl = [str(kubectl_binary()), "--kubeconfig", str(e2e_node.cp.kubeconfig), "apply", "-n", namespace]
        results = []
        for name, code, read_only in (("save", SAVE_SKILL, False), ("reuse", REUSE_SKILL, True)):
            task = {
                "apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": name},
                "spec": {"timeoutSeconds": 120, "mcpServers": ["crm"], "code": code,
                         "skills": {"owner": "crm-team", "readOnly": read_only}},
            }  # fmt: skip
            subprocess.run([*kubectl, "-f", "-"], input=json.dumps(task), text=True, check=True)
            status = wait_task(custom, name, namespace)["status"]
            assert status["phase"] == "Succeeded", status
            results.append(status["result"])
        assert "saved: ['customers_on_plan']" in results[0], results
        assert "enterprise: ['Alice Martin']" in results[1], results
        assert (volume / "customers_on_plan" / "SKILL.md").is_file(), sorted(p.name for p in volume.rglob("*"))
    finally:
        core.delete_persistent_volume(pv)
        shutil.rmtree(volume)


ABUSE_CODE = r"""
import os, socket, urllib.parse
gateway = urllib.parse.urlsplit(os.environ["MCPEXEC_GATEWAY_URL"])

def status_line(sock):
    sock.settimeout(30)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    sock.close()
    return data.split(b"\r\n", 1)[0].decode(errors="replace") or "closed"

flood = socket.create_connection((gateway.hostname, gateway.port))
flood.sendall(b"GET /v1/servers HTTP/1.1\r\nHost: gateway\r\nX-Big: ")
try:
    for _ in range(64):  # 4 MiB of one header, offered before any token
        flood.sendall(b"a" * 65536)
except OSError:
    pass
print("flood:", status_line(flood))
slow = socket.create_connection((gateway.hostname, gateway.port))
slow.sendall(b"GET /v1/servers HTTP/1.1\r\n")  # and never the rest of the head
print("slow:", status_line(slow))
refused = 0
for i in range(40):
    try:
        call_tool(f"crm/nope{i}", {})
    except Exception as exc:
        refused += "not_found" in str(exc)
print("unknown tools refused:", refused)
alice = call_tool("crm/get_customer", {"customer_id": "C001"})
email, iban = alice["email"], alice["iban"]
call_tool("crm/send_message", {"to": email, "subject": "glue", "body": f"{email}_{iban}9 x{email} " + "a" * 30000})
# Digit runs crafted to be slow to scan: the gateway scans them in its worker processes (the pod's own /dev/shm).
call_tool("crm/send_message", {"to": email, "subject": "digits", "body": "4111 " * 4000})
sent = call_tool("crm/sent_messages", {})["result"]
print("glue:", [m["body"][:60] for m in sent if m["subject"] == "glue"])
print("digits:", [len(m["body"]) for m in sent if m["subject"] == "digits"])
for arguments in ({"to": email + "_x", "subject": "s", "body": ""}, {f"{email}_": 1, "to": email}):
    try:
        call_tool("crm/send_message", arguments)
    except Exception as exc:
        print("error:", exc)
"""

SCRAPE = """
import sys, urllib.request
for ip in sys.argv[1:]:
    metrics = urllib.request.urlopen(f"http://{ip}:9090/metrics", timeout=10).read().decode()
    series = [line for line in metrics.splitlines() if line.startswith("mcpexec_gateway_tool_calls_total{")]
    print("replica:", len(series), "series,", "nope" in metrics and "named" or "unnamed")
"""

FILL_WORKSPACE = """
import time
with open("/workspace/fill", "wb") as out:
    for _ in range(64):
        out.write(b"x" * (1 << 20))
print("wrote 64 MiB")
time.sleep(300)
"""


def _apply(e2e_node: Node, namespace: str, name: str, spec: dict[str, Any]) -> None:
    task = {"apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": name}, "spec": spec}
    kubectl = [str(kubectl_binary()), "--kubeconfig", str(e2e_node.cp.kubeconfig), "apply", "-n", namespace]
    subprocess.run([*kubectl, "-f", "-"], input=json.dumps(task), text=True, check=True)


def test_a_hostile_task_against_the_shared_gateway(
    e2e_node: Node, release: str, core: client.CoreV1Api, namespace: str
) -> None:
    """Issue 17's cluster abuse tier, from inside a task pod against the shared gateway: a 4 MiB header (431, or the
    connection closed), a head that never ends (408), 40 unknown tools (no metric series named after them, on
    either replica, read from the ops port by a scraper in the release's namespace), tokens glued to words and a
    crafted `(a+)+b` custom pattern over 30 KB of `a` (RE2), de-tokenized values coming back from the tool and in
    schema errors: nothing raw reaches the task. Then a backreference pattern is refused by the operator, and a task
    writing past its workspace size is evicted and fails saying so."""
    custom = client.CustomObjectsApi()
    crm_ip = crm_server(core, custom, namespace)
    _apply(e2e_node, namespace, "hostile", {
        "timeoutSeconds": 120, "mcpServers": ["crm"], "code": ABUSE_CODE,
        "pii": {"customPatterns": [{"name": "RUN", "regex": "(a+)+b"}]},
    })  # fmt: skip
    status = wait_task(custom, "hostile", namespace)["status"]
    assert status["phase"] == "Succeeded", status
    result = status["result"]
    assert "flood: HTTP/1.1 431 " in result or "flood: closed" in result, result
    assert "slow: HTTP/1.1 408 " in result, result
    assert "unknown tools refused: 40" in result, result
    assert "glue: ['[EMAIL_1]_[IBAN_1]9 x[EMAIL_1] aaaa" in result, result
    assert "digits: [20000]" in result, result
    assert result.count("error: invalid_arguments (422)") == 2, result
    assert "alice.martin" not in result.lower() and "DE89370400440532013000" not in result, result
    outbox = asyncio.run(sent_messages(f"http://{crm_ip}:8080/mcp"))
    assert [m["subject"] for m in outbox] == ["glue", "digits"], outbox
    assert outbox[0]["body"].startswith("alice.martin@example.com_DE89370400440532013000"), outbox

    gateways = core.list_namespaced_pod(release, label_selector="app.kubernetes.io/name=mcpexec-gateway").items
    scraper = pod("scraper", "")
    scraper["spec"]["containers"][0].update(
        image=f"docker.io/mcpexec/runtime:{PROJECT_VERSION}",
        command=["python3", "-c", SCRAPE, *(str(g.status.pod_ip) for g in gateways)],
        args=None,
    )
    try:
        scraped = run_to_completion(core, release, scraper)
    finally:
        core.delete_namespaced_pod("scraper", release, grace_period_seconds=0)
    replicas = [line for line in scraped.splitlines() if line.startswith("replica:")]
    assert len(replicas) == 2 and all(line.endswith("unnamed") for line in replicas), scraped
    # One series per (known tool, outcome) this module's tasks met and one (unknown): not one per name sent.
    assert all(int(line.split()[1]) <= 10 for line in replicas), scraped

    _apply(e2e_node, namespace, "backtracking", {
        "timeoutSeconds": 60, "mcpServers": ["crm"], "code": "print(1)",
        "pii": {"customPatterns": [{"name": "RUN", "regex": r"(a+)+\1b"}]},
    })  # fmt: skip
    refused = wait_task(custom, "backtracking", namespace)["status"]
    accepted = next(c for c in refused["conditions"] if c["type"] == "Accepted")
    assert refused["phase"] == "Failed" and accepted["reason"] == "InvalidSpec" and "RE2" in accepted["message"]

    _apply(e2e_node, namespace, "hoarder", {"timeoutSeconds": 240, "code": FILL_WORKSPACE})
    evicted = wait_task(custom, "hoarder", namespace, timeout=200)["status"]
    assert evicted["phase"] == "Failed", evicted
    finished = next(c for c in evicted["conditions"] if c["type"] == "Finished")
    assert finished["message"].startswith("evicted: ") and "workspace" in finished["message"], evicted
