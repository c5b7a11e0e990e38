"""What the fault tests read of the release: its components' pods, when they are back, which gateway replica a sandbox
talks to."""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

from kubernetes import client

from tests.e2e.release import RELEASE_NAMESPACE
from tests.e2e.sessions import SESSIONS_PORT

GATEWAY_SERVICE = "mcpexec-gateway"
REDIS_SERVICE = "mcpexec-redis"
SANDBOX_PORT = 8000  # the gateway's port for sandboxes (gateway.port)


def pods(component: str) -> list[Any]:
    """The release's pods of one component (gateway, redis, operator), oldest first, terminating ones left out."""
    found: Any = client.CoreV1Api().list_namespaced_pod(
        RELEASE_NAMESPACE, label_selector=f"app.kubernetes.io/name=mcpexec-{component}"
    )
    alive = [p for p in found.items if p.metadata.deletion_timestamp is None]
    return sorted(alive, key=lambda p: p.metadata.creation_timestamp)


def is_ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def wait_ready(component: str, replicas: int, timeout: float = 180) -> list[Any]:
    """Until `replicas` pods of the component are Ready (and no other pod of it is left)."""
    deadline = time.monotonic() + timeout
    while True:
        found = pods(component)
        if len(found) == replicas and all(is_ready(p) for p in found):
            return found
        assert time.monotonic() < deadline, [(p.metadata.name, is_ready(p)) for p in found]
        time.sleep(0.2)


def wait_restarted(component: str, pod: str, restarts: int, timeout: float = 180) -> None:
    """Until the pod's container has restarted since it had `restarts`, and is Ready again."""
    deadline = time.monotonic() + timeout
    while True:
        found: Any = client.CoreV1Api().read_namespaced_pod(pod, RELEASE_NAMESPACE)
        statuses = found.status.container_statuses or []
        if statuses and statuses[0].restart_count > restarts and is_ready(found):
            return
        assert time.monotonic() < deadline, f"{component} pod {pod} not back: {found.status}"
        time.sleep(0.2)


def wait_release_ready(timeout: float = 180) -> None:
    """Both gateway replicas, Redis and the operator Ready: the state every fault test starts from and returns to."""
    for component, replicas in (("gateway", 2), ("redis", 1), ("operator", 1)):
        wait_ready(component, replicas, timeout)


def sessions_url(pod: Any) -> str:
    """A gateway replica's sessions port, at the pod's address (as an Ingress reaches it)."""
    return f"http://{pod.status.pod_ip}:{SESSIONS_PORT}"


def service_ip(name: str) -> str:
    service: Any = client.CoreV1Api().read_namespaced_service(name, RELEASE_NAMESPACE)
    return str(service.spec.cluster_ip)


def serving_gateway(sandbox_ip: str, timeout: float = 30) -> Any:
    """The gateway replica a sandbox's connections reach: the Service keeps a client on one replica (ClientIP
    affinity), and the node's connection tracking shows which (the reply's source of an established connection
    from the sandbox to the Service). A session's runtime always has one open (its long poll)."""
    service = service_ip(GATEWAY_SERVICE)
    deadline = time.monotonic() + timeout
    while True:
        listed = subprocess.run(
            ["conntrack", "-L", "-p", "tcp", "--orig-src", sandbox_ip, "--orig-dst", service,
             "--orig-port-dst", str(SANDBOX_PORT), "--state", "ESTABLISHED"],
            capture_output=True, text=True,
        )  # fmt: skip
        replicas = {re.findall(r"src=(\S+)", line)[1] for line in listed.stdout.splitlines() if "src=" in line}
        by_ip = {p.status.pod_ip: p for p in pods("gateway")}
        if len(replicas) == 1 and (address := replicas.pop()) in by_ip:
            return by_ip[address]
        assert time.monotonic() < deadline, f"sandbox {sandbox_ip} -> gateway: {listed.stdout} {listed.stderr}"
        time.sleep(0.2)


def other_gateway(than: Any) -> Any:
    """A Ready gateway replica other than `than`."""
    others = [p for p in pods("gateway") if p.metadata.name != than.metadata.name and is_ready(p)]
    assert others, f"no Ready gateway replica besides {than.metadata.name}"
    return others[0]
