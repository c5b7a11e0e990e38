"""The node really runs pods: under gVisor with `runtimeClassName: gvisor`, under runc without it, and
pods reach each other and the host over the CNI bridge."""

from __future__ import annotations

import http.server
import threading
import uuid
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.node import Node
from tests.e2e.node_network import BRIDGE_IP
from tests.e2e.pods import pod, run_to_completion, wait_phase
from tests.support.components import free_port

pytestmark = pytest.mark.e2e


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
        # Retried: the NetworkPolicy enforcer rejects a pod's packets until it has seen the pod (fail closed).
        fetch = f"timeout 2 wget -q -O - http://{BRIDGE_IP}:{port}/"
        script = f"for i in $(seq 30); do {fetch} && exit 0; sleep 0.5; done; exit 1"
        log = run_to_completion(core, namespace, pod("to-host", script))
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
