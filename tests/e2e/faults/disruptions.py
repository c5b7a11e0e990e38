"""The faults, done to the node the way they happen: a process SIGKILLed (an OOM kill, a crash: the kubelet restarts
the container in place), a pod deleted at once (a node drain with no grace, `kubectl delete pod --grace-period=0
--force`), a Service whose packets are dropped for a while (a network partition), the kubelet killed and started
again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.e2e.node import Node
from tests.e2e.node_teardown import processes_mentioning
from tests.e2e.release import REDIS_DATA, RELEASE_NAMESPACE

# Kubelets this package started again: the node's teardown stops them (their command line names its directory,
# node_teardown.kill_leftovers); they are reaped after it.
_kubelets: list[subprocess.Popen[bytes]] = []


def _container_id(namespace: str, pod: str) -> str:
    found: Any = client.CoreV1Api().read_namespaced_pod(pod, namespace)
    statuses = found.status.container_statuses or []
    assert statuses and statuses[0].container_id, f"pod {namespace}/{pod} has no running container: {found.status}"
    return str(statuses[0].container_id).removeprefix("containerd://")


def sigkill(the_node: Node, namespace: str, pod: str) -> int:
    """SIGKILL every process of the pod's (first) container, as the kernel's OOM killer does; the kubelet starts it
    again in the same pod. Returns the container's restart count before."""
    found: Any = client.CoreV1Api().read_namespaced_pod(pod, namespace)
    restarts = int((found.status.container_statuses or [])[0].restart_count)
    the_node.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", _container_id(namespace, pod))
    return restarts


def force_delete(namespace: str, pod: str) -> None:
    """What `kubectl delete pod --grace-period=0 --force` does: the pod is gone from the API at once, its controller
    makes another, the kubelet kills what ran."""
    client.CoreV1Api().delete_namespaced_pod(pod, namespace, grace_period_seconds=0)


def lose_redis_disk(the_node: Node) -> None:
    """The bundled Redis moved to a node without its disk: its pod gone, its volume (the append-only file) emptied,
    a new pod started on it."""
    apps, core = client.AppsV1Api(), client.CoreV1Api()
    apps.patch_namespaced_deployment_scale("mcpexec-redis", RELEASE_NAMESPACE, {"spec": {"replicas": 0}})
    deadline = time.monotonic() + 60
    while core.list_namespaced_pod(RELEASE_NAMESPACE, label_selector="app.kubernetes.io/name=mcpexec-redis").items:
        assert time.monotonic() < deadline, "the Redis pod outlived its Deployment's scale to 0"
        time.sleep(0.2)
    for entry in (the_node.workdir / REDIS_DATA).iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    apps.patch_namespaced_deployment_scale("mcpexec-redis", RELEASE_NAMESPACE, {"spec": {"replicas": 1}})


def _drop_rules(addresses: list[str]) -> list[list[str]]:
    # The raw table, first: before kube-proxy's DNAT (a Service's address is still the destination) and the
    # NetworkPolicy enforcer's chains, for bridged packets too (br_netfilter), established connections included.
    rules = []
    for address in addresses:
        rules.append(["-s", address, "-j", "DROP"])
        rules.append(["-d", address, "-j", "DROP"])
    return rules


@contextmanager
def unreachable(*addresses: str) -> Iterator[None]:
    """Every packet from or to `addresses` (a pod's and its Service's) dropped until the block ends: connections
    hang, new ones time out, as behind a partition."""
    rules = _drop_rules(list(addresses))
    for rule in rules:
        subprocess.run(["iptables", "-w", "-t", "raw", "-I", "PREROUTING", *rule], check=True)
    try:
        yield
    finally:
        for rule in rules:
            subprocess.run(["iptables", "-w", "-t", "raw", "-D", "PREROUTING", *rule], check=True)


def _kubelet_pid(the_node: Node) -> int:
    binary = str(the_node.bins / "kubelet")
    pids = [
        pid
        for pid in processes_mentioning(str(the_node.workdir / "kubelet"))
        if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() == binary and _alive(pid)
    ]
    assert len(pids) == 1, f"kubelets running: {pids}"
    return pids[0]


def _alive(pid: int) -> bool:
    try:
        # The third field of stat is the state; Z: exited, not reaped yet (the node's Popen is its parent).
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def restart_kubelet(the_node: Node) -> None:
    """SIGKILL the node's kubelet and start it again with the same command line and environment, logging on to the
    same file: the pods' containers run on in containerd meanwhile."""
    pid = _kubelet_pid(the_node)
    args = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(e.decode().split("=", 1) for e in environ if b"=" in e)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, f"kubelet {pid} outlived SIGKILL"
        time.sleep(0.05)
    with (the_node.workdir / "kubelet.log").open("ab") as log:
        _kubelets.append(
            subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        )


def reap_restarted_kubelets() -> None:
    """After the node's teardown stopped them."""
    for kubelet in _kubelets:
        try:
            kubelet.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kubelet.kill()
            kubelet.wait()
    _kubelets.clear()
