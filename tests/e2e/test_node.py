"""The node really runs pods: under gVisor with `runtimeClassName: gvisor`, under runc without it, and
pods reach each other and the host over the CNI bridge."""

from __future__ import annotations

import http.server
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.node import BRIDGE_IP, BUSYBOX_IMAGE, Node
from tests.support.components import free_port

pytestmark = pytest.mark.e2e


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    # Pods need the namespace's default ServiceAccount (made by kube-controller-manager).
    deadline = time.monotonic() + 30
    while not core.list_namespaced_service_account(name).items:
        assert time.monotonic() < deadline, f"no default ServiceAccount in {name}"
        time.sleep(0.2)
    yield name
    core.delete_namespace(name)


def pod(name: str, script: str, runtime_class: str | None = "gvisor", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "runtimeClassName": runtime_class,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "args": [script]},
            ],
            **spec,
        },
    }


def wait_phase(core: client.CoreV1Api, ns: str, name: str, phases: set[str], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = core.read_namespaced_pod(name, ns)
        if found.status.phase in phases:
            return found
        if time.monotonic() > deadline:
            events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
            raise AssertionError(
                f"pod {ns}/{name} is {found.status.phase}, not {phases}, after {timeout}s; "
                f"status: {found.status}; events: {[(e.reason, e.message) for e in events]}"
            )
        time.sleep(0.2)


def run_to_completion(core: client.CoreV1Api, ns: str, body: dict[str, Any], timeout: float = 120) -> str:
    """Create the pod, wait until it Succeeded, return its log (fails with the log if it Failed)."""
    name = body["metadata"]["name"]
    started = time.monotonic()
    core.create_namespaced_pod(ns, body)
    done = wait_phase(core, ns, name, {"Succeeded", "Failed"}, timeout)
    log: str = core.read_namespaced_pod_log(name, ns)
    print(f"pod {name} ({body['spec']['runtimeClassName'] or 'runc'}) done in {time.monotonic() - started:.1f}s")
    assert done.status.phase == "Succeeded", f"pod {name} failed: {done.status}; log:\n{log}"
    return log


def test_pod_runs_under_gvisor(core: client.CoreV1Api, namespace: str) -> None:
    log = run_to_completion(core, namespace, pod("gvisor", "cat /proc/version; dmesg"))
    assert "Starting gVisor..." in log, log
    assert Path("/proc/version").read_text().strip() not in log, log


def test_pod_without_runtime_class_runs_on_the_host_kernel(core: client.CoreV1Api, namespace: str) -> None:
    log = run_to_completion(core, namespace, pod("runc", "cat /proc/version", runtime_class=None))
    assert log.strip() == Path("/proc/version").read_text().strip()


def test_gvisor_pod_reaches_another_pod_over_the_bridge(core: client.CoreV1Api, namespace: str) -> None:
    server = pod("server", "echo hello-from-server > /tmp/index.html && exec httpd -f -p 8080 -h /tmp")
    server["spec"]["restartPolicy"] = "Always"
    core.create_namespaced_pod(namespace, server)
    running = wait_phase(core, namespace, "server", {"Running"})
    ip = running.status.pod_ip
    assert ip, running.status
    # (Debian's busybox-static wget segfaults with -T, on the host too: `timeout` bounds it instead.)
    script = (
        f"for i in $(seq 30); do timeout 2 wget -q -O - http://{ip}:8080/index.html && exit 0; sleep 0.5; done; exit 1"
    )
    log = run_to_completion(core, namespace, pod("client", script))
    assert "hello-from-server" in log


def test_gvisor_pod_reaches_the_host(e2e_node: Node, core: client.CoreV1Api, namespace: str) -> None:
    """A server on the host, on the bridge's address (where a host-side gateway would listen)."""
    body = f"hello-from-host-{uuid.uuid4().hex[:6]}".encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        log = run_to_completion(core, namespace, pod("to-host", f"timeout 10 wget -q -O - http://{BRIDGE_IP}:{port}/"))
    finally:
        httpd.shutdown()
    assert body.decode() in log


def test_gvisor_pod_reaches_a_service_by_its_dns_name(core: client.CoreV1Api, namespace: str) -> None:
    """kube-proxy (ClusterIP) and the cluster DNS (CoreDNS behind kube-dns), as the gateway is reached."""
    server = pod("web", "echo hello-from-service > /tmp/index.html && exec httpd -f -p 8080 -h /tmp")
    server["spec"]["restartPolicy"] = "Always"
    core.create_namespaced_pod(namespace, server)
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    wait_phase(core, namespace, "web", {"Running"})
    fetch = f"timeout 2 wget -q -O - http://web.{namespace}.svc.cluster.local/index.html"
    script = f"cat /etc/resolv.conf; for i in $(seq 40); do {fetch} && exit 0; sleep 0.5; done; exit 1"
    log = run_to_completion(core, namespace, pod("client", script))
    assert "nameserver 10.96.0.10" in log
    assert "hello-from-service" in log
