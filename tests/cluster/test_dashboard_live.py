"""The chart's Grafana dashboard and alerts evaluated by a real Prometheus (docs/observability.md), scraping a real
operator (`python -m controller`) and a real gateway (`python -m gateway`: its Redis, its egress proxy, its LLM proxy)
while they do real work against the real API server: a cold task through the operator (its pod's phases played, no
kubelet runs in this tier), a warm pool, a task whose Job the namespace's quota refuses (a reconcile error); the task's
tool calls to a real MCP server (answered, refused, held for approval, one to a server that is down), an LLM request
(the scripted model), an egress connection the task has no grant for.

Every panel's query and every alert's expression is evaluated through the HTTP API: Prometheus refuses none, every
metric they read has series, and every panel shows something (rates over at least two scrapes)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from mcpexec.api.meta import API_VERSION, GATEWAY_AUDIENCE, GROUP, MCPSERVER_PLURAL, VERSION
from tests.cluster import kube
from tests.cluster.kube import create_task, job_pod, play_kubelet, wait_for, wait_phase
from tests.cluster.operator import get, operator_process
from tests.cluster.test_pools import _warm_pool
from tests.support.chart import render
from tests.support.components import REPO, demo_over_http, free_port, redis_server
from tests.support.control_plane import ControlPlane
from tests.support.malformed import agenttask
from tests.support.prometheus import Prometheus, alerts_of, dashboard_of, dashboard_queries, find_rule, selectors
from tests.support.scripted_llm import ScriptedLLM

OPERATOR_JOB, GATEWAY_JOB = "rel-mcpexec-operator-metrics", "rel-mcpexec-gateway"
EMAIL = "bob.okafor@example.net"


def _mcp_server(namespace: str, name: str, port: int) -> None:
    body = {
        "apiVersion": API_VERSION,
        "kind": "MCPServer",
        "metadata": {"name": name},
        "spec": {"transport": "streamableHttp", "url": f"http://127.0.0.1:{port}/mcp"},
    }
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, MCPSERVER_PLURAL, body)


@contextmanager
def _gateway(cluster: ControlPlane, redis_url: str, llm: ScriptedLLM, log: Path) -> Iterator[dict[str, int]]:
    """`python -m gateway` on loopback ports, as deployed; yields its ports by name (api, ops, egress)."""
    ports = {"api": free_port(), "ops": free_port(), "sessions": free_port(), "egress": free_port()}
    env = {
        **cluster.env(),
        "REDIS_URL": redis_url,
        "MCPEXEC_GATEWAY_HOST": "127.0.0.1",
        "MCPEXEC_GATEWAY_PORT": str(ports["api"]),
        "MCPEXEC_GATEWAY_OPS_PORT": str(ports["ops"]),
        "MCPEXEC_GATEWAY_SESSIONS_PORT": str(ports["sessions"]),
        "MCPEXEC_EGRESS_PORT": str(ports["egress"]),
        "MCPEXEC_SKILLS_SEAL_KEY": "a-test-key-of-thirty-two-bytes-or-more",
        "LLM_BASE_URL": llm.url,
        "LLM_API_KEY": "sk-test-upstream",
        "LLM_MODEL": "scripted",
    }
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gateway"], cwd=REPO, env=env, stdout=out, stderr=out)
        try:
            wait_for(lambda: proc.poll() is None and get(f"http://127.0.0.1:{ports['ops']}/readyz"), 60, "gateway")
            yield ports
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _task_token(pod: client.V1Pod) -> str:
    """The projected token the kubelet would mount in the task's pod: its ServiceAccount's, bound to the pod."""
    bound = {"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name, "uid": pod.metadata.uid}
    request = {"spec": {"audiences": [GATEWAY_AUDIENCE], "expirationSeconds": 600, "boundObjectRef": bound}}
    answer = client.CoreV1Api().create_namespaced_service_account_token(
        pod.spec.service_account_name, pod.metadata.namespace, request
    )
    return str(answer.status.token)


def _egress_refused(port: int, token: str) -> bytes:
    """A plain http:// request through the egress proxy to a host the task has no grant for: its status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(
            b"GET http://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n"
            + f"Proxy-Authorization: Bearer {token}\r\n\r\n".encode()
        )
        return conn.recv(1024).split(b"\r\n", 1)[0]


@contextmanager
def _jobs_refused() -> Iterator[str]:
    """A namespace where the API server refuses every Job (a ValidatingAdmissionPolicy): a task's reconcile there
    raises, and is retried."""
    policy, label = "mcpexec-test-no-jobs", "mcpexec-test/no-jobs"
    admission = client.AdmissionregistrationV1Api()
    rules = [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}]
    admission.create_validating_admission_policy(
        {
            "metadata": {"name": policy},
            "spec": {
                "matchConstraints": {"resourceRules": rules},
                "validations": [{"expression": "false", "message": "no Jobs in this namespace"}],
            },
        }
    )
    selector = {"namespaceSelector": {"matchLabels": {label: "true"}}}
    binding = {"policyName": policy, "validationActions": ["Deny"], "matchResources": selector}
    admission.create_validating_admission_policy_binding({"metadata": {"name": policy}, "spec": binding})
    namespace = kube.create_namespace()
    client.CoreV1Api().patch_namespace(namespace, {"metadata": {"labels": {label: "true"}}})

    def refusing() -> bool:  # the API server applies a new policy once its informer has it
        pod = {"restartPolicy": "Never", "containers": [{"name": "probe", "image": "probe"}]}
        job = {"metadata": {"name": "probe"}, "spec": {"template": {"spec": pod}}}
        try:
            client.BatchV1Api().create_namespaced_job(namespace, job, dry_run="All")
        except ApiException as exc:
            return "no Jobs in this namespace" in str(exc.body)
        return False

    try:
        wait_for(refusing, what="the admission policy in effect")
        yield namespace
    finally:
        client.CoreV1Api().delete_namespace(namespace)
        admission.delete_validating_admission_policy_binding(policy)
        admission.delete_validating_admission_policy(policy)


def _work(namespace: str, ports: dict[str, int]) -> None:
    """A task's tool calls, LLM request and egress connection through the gateway, as its sandbox would make them."""
    pod = job_pod(namespace, "mcpexec-work")
    play_kubelet(pod, "Running")
    wait_phase(namespace, "work", "Running")
    token = _task_token(pod)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{ports['api']}", headers=headers, timeout=60) as gw:
        found = gw.post("/v1/tools/crm/search_customers/call", json={"arguments": {"query": EMAIL}})
        assert found.status_code == 200, found.text
        assert EMAIL not in found.text  # tokenized
        held_call = {"arguments": {"customer_id": "C001"}, "callId": "held-call-1"}
        held = gw.post("/v1/tools/crm/get_customer/call", json=held_call)
        assert (held.status_code, held.json()["error"]["code"]) == (409, "approval_pending")
        unknown = gw.post("/v1/tools/crm/nope/call", json={"arguments": {}})
        assert unknown.status_code == 404
        down = gw.post("/v1/tools/gone/anything/call", json={"arguments": {}})
        assert (down.status_code, down.json()["error"]["code"]) == (503, "server_unavailable")
        answer = gw.post("/v1/llm/chat/completions", json={"messages": [{"role": "user", "content": "hello"}]})
        assert answer.status_code == 200, answer.text
    assert _egress_refused(ports["egress"], token).startswith(b"HTTP/1.1 403 ")


def test_every_dashboard_query_and_alert_evaluates_against_a_live_prometheus(
    cluster: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    crm_port, gone_port = free_port(), free_port()  # nothing listens on the second: that server is down
    _mcp_server(namespace, "crm", crm_port)
    _mcp_server(namespace, "gone", gone_port)
    operator_metrics = free_port()
    with (
        _jobs_refused() as no_jobs,
        redis_server() as redis_url,
        ScriptedLLM(["hello from the model"]) as llm,
        demo_over_http(crm_port),
        operator_process(cluster, free_port(), operator_metrics, tmp_path / "operator.log"),
        _gateway(cluster, redis_url, llm, tmp_path / "gateway.log") as ports,
    ):
        targets = {OPERATOR_JOB: operator_metrics, GATEWAY_JOB: ports["ops"]}
        with Prometheus(targets, tmp_path).running() as prometheus:
            spec = {"mcpServers": ["crm", "gone"], "approval": {"tools": ["crm/get_customer"]}}
            create_task(namespace, agenttask("work", **spec))
            _warm_pool(namespace, "fast", 1)
            create_task(no_jobs, agenttask("refused"))
            _work(namespace, ports)
            scraped = f"http://127.0.0.1:{operator_metrics}/metrics"
            wait_for(lambda: "reconcile_errors_total{" in (get(scraped) or ""), what="a reconcile error")
            play_kubelet(job_pod(namespace, "mcpexec-work"), "Succeeded", exit_code=0, message="{}")
            wait_phase(namespace, "work", "Succeeded")
            # Two more scrapes of each after the work: every rate has two samples of it.
            done = {job: prometheus.scrapes(job) for job in targets}
            wait_for(lambda: all(prometheus.scrapes(job) >= done[job] + 2 for job in targets), what="two scrapes")
            _evaluate(prometheus)


def _evaluate(prometheus: Prometheus) -> None:
    panels = dashboard_queries(dashboard_of(render("--set", "grafanaDashboard.enabled=true")))
    docs = render("--set", "alerts.enabled=true", "--set", "redis.alerts.enabled=true")
    rules = [find_rule(docs, "rel-mcpexec-alerts"), find_rule(docs, "rel-mcpexec-pii-vault")]
    alerts = [alert["expr"] for rule in rules for alert in alerts_of(rule).values()]
    for expr in alerts:
        prometheus.query(expr)  # refused: the test fails with Prometheus' error
    empty = [expr for expr in panels if not prometheus.query(expr)]
    assert not empty, f"panels with nothing to show: {empty}"
    names = {s.name for selected in selectors(panels + alerts) for s in selected if s.name.startswith("mcpexec_")}
    unseen = sorted(name for name in names if not prometheus.query(name))
    assert not unseen, f"metrics with no series: {unseen}"
