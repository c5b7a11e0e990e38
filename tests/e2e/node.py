"""A real single-node Kubernetes cluster on this machine whose kubelet runs pods under gVisor.

On top of tests/support/control_plane.py (etcd, kube-apiserver, kube-controller-manager) this starts
kube-scheduler, containerd (its own config, root, state and socket; runc and the gVisor shim as
runtimes; CNI bridge network), and a kubelet that registers the node and waits until it is Ready; the
RuntimeClass `gvisor` (handler `runsc`) is created. Everything lives under one temporary directory and
is stopped and removed afterwards, including the pods' sandboxes, mounts and the CNI bridge.

Binaries: tests/e2e/build-node.sh (kubelet, kube-scheduler, containerd-shim-runsc-v1, runsc from the Go
module proxy, cached); containerd, runc and the CNI plugins are Debian's. One node at a time per machine
(a lock file): the bridge and its subnet are fixed.

This module is the node's lifecycle; its parts: node_artifacts (binaries, images, packages), node_config (PKI,
containerd, runsc, kubelet files), node_network (the bridge, iptables cleanup), node_teardown (leftover processes,
mounts, kept logs), node_addons (readiness, RuntimeClass, CoreDNS).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.e2e.node_addons import (
    coredns_manifests,
    create_runtime_class,
    deployment_available,
    kubectl_apply,
    node_ready,
)
from tests.e2e.node_artifacts import ensure_debian_packages, image_archives, kubectl_binary, node_binaries
from tests.e2e.node_config import (
    NODE_NAME,
    containerd_config,
    kubelet_configuration,
    runsc_config_toml,
    write_client_ca,
)
from tests.e2e.node_network import (
    POD_SUBNET,
    cni_config,
    delete_bridge,
    delete_cni_leftovers,
    delete_kube_firewall,
    delete_netpol_chains,
    host_ip,
)
from tests.e2e.node_teardown import keep_logs_of, kill_leftovers, unmount_under
from tests.support.components import REPO, free_port
from tests.support.control_plane import ControlPlane, _write_kubeconfig, control_plane, spawn

LOCK = Path("/run/mcpexec-e2e-node.lock")


@dataclass(frozen=True)
class Node:
    cp: ControlPlane
    name: str
    workdir: Path
    bins: Path
    containerd_socket: Path

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`ctr` against this node's containerd, in the namespace the kubelet uses."""
        cmd = ["ctr", "--address", str(self.containerd_socket), "--namespace", "k8s.io", *args]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=300)

    def import_image(self, archive: Path) -> None:
        """Import a docker-archive (or OCI) tarball so that pods can use it with imagePullPolicy Never."""
        out = self.ctr("images", "import", str(archive), check=False)
        if out.returncode != 0:
            raise RuntimeError(f"ctr images import {archive} failed: {out.stderr.strip() or out.stdout.strip()}")

    def log(self, component: str) -> str:
        """The log of kubelet, containerd, kube-scheduler (or a control-plane component)."""
        for directory in (self.workdir, self.cp.workdir):
            path = directory / f"{component}.log"
            if path.exists():
                return path.read_text(errors="replace")
        raise FileNotFoundError(component)


def _wait(probe: object, timeout: float, what: str, procs: Sequence[subprocess.Popen[bytes]], logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while True:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode} while waiting for {what}; see {logs}")  # type: ignore[index]
        if probe():  # type: ignore[operator]
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}; see {logs}")
        time.sleep(0.25)


def _spawn_node(
    stack: ExitStack, args: list[str], log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Node components get longer to stop than the control plane's (the kubelet drains its pods)."""
    return spawn(stack, args, log, env, stop_seconds=20)


def _drain(stack: ExitStack, kubeconfig: Path, kubectl: Path | None, the_node: Node) -> None:
    """Before the kubelet stops: delete every pod and wait until the kubelet has stopped their sandboxes
    (runsc exits, CNI DEL removes the pod's address and NAT rules)."""

    def drain() -> None:
        if kubectl is None:
            return
        base = [str(kubectl), "--kubeconfig", str(kubeconfig)]
        # Controllers first, or they would make new pods.
        subprocess.run(
            [*base, "delete", "deployments,replicasets,statefulsets,daemonsets,jobs", "--all", "-A", "--wait=false"],
            capture_output=True,
            timeout=60,
        )
        subprocess.run(
            [*base, "delete", "pods", "--all", "-A", "--grace-period=0", "--force", "--wait=false"],
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            tasks = the_node.ctr("tasks", "ls", "-q", check=False)
            if tasks.returncode != 0 or not tasks.stdout.strip():
                return
            time.sleep(0.5)

    stack.callback(drain)


@contextmanager
def node(platform: str = "systrap", ready_timeout: float = 120) -> Iterator[Node]:
    """Start a whole single-node cluster; yield it once the node is Ready; remove every trace after."""
    ensure_debian_packages()
    bins = node_binaries()
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LOCK.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"another e2e node is running on this machine (lock {LOCK})") from None
        # A SIGTERM (a CI timeout) unwinds the node like an exception instead of leaving it running.
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
        try:
            yield from _node(bins, platform, ready_timeout)
        finally:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _node(bins: Path, platform: str, ready_timeout: float) -> Iterator[Node]:
    workdir = Path(tempfile.mkdtemp(prefix="mcpexec-node-"))
    address = host_ip()
    node_user = f"system:node:{NODE_NAME}"
    ca, client_crt, client_key = write_client_ca(workdir / "pki", "kube-apiserver-kubelet-client", "system:masters")
    cp_cm = control_plane(
        # Each component authenticates as itself (the default RBAC binds these users).
        users={node_user: ["system:nodes"], "system:kube-scheduler": [], "system:kube-proxy": []},
        # Pods reach the API server (the `kubernetes` Service) at the node's address.
        address=address,
        apiserver_args=[
            "--authorization-mode", "Node",  # after the default RBAC (a list flag)
            "--enable-admission-plugins", "NodeRestriction",
            "--kubelet-client-certificate", str(client_crt),
            "--kubelet-client-key", str(client_key),
            "--kubelet-preferred-address-types", "InternalIP",
        ],
        controllers="*",
    )  # fmt: skip
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, True)
        stack.callback(delete_bridge)
        stack.callback(delete_cni_leftovers)
        stack.callback(delete_kube_firewall)
        stack.callback(unmount_under, workdir)
        stack.callback(kill_leftovers, workdir)
        cp = stack.enter_context(cp_cm)

        def keep_logs(exc_type: object, exc: BaseException | None, tb: object) -> None:
            if exc is not None or os.environ.get("MCPEXEC_E2E_KEEP_LOGS") == "1":
                kept = keep_logs_of([workdir, cp.workdir])
                if exc is not None:
                    exc.add_note(f"logs of the node kept in {kept}")

        stack.push(keep_logs)
        ca_path = cp.workdir / "certs" / "apiserver.crt"
        kubeconfigs = {}
        for component, user in (
            ("scheduler", "system:kube-scheduler"),
            ("kubelet", node_user),
            ("proxy", "system:kube-proxy"),
        ):
            kubeconfigs[component] = workdir / f"{component}.kubeconfig"
            _write_kubeconfig(kubeconfigs[component], cp.url, cp.user_tokens[user], ca_path)
        scheduler_kubeconfig, kubelet_kubeconfig = kubeconfigs["scheduler"], kubeconfigs["kubelet"]
        scheduler = _spawn_node(
            stack,
            [str(bins / "kube-scheduler"), "--kubeconfig", str(scheduler_kubeconfig), "--leader-elect=false",
             "--secure-port", "0"],
            workdir / "kube-scheduler.log",
        )  # fmt: skip
        # kube-proxy (iptables): Services, `kubernetes` included; its rules are removed afterwards.
        stack.callback(subprocess.run, [str(bins / "kube-proxy"), "--cleanup"], capture_output=True)
        proxy = _spawn_node(
            stack,
            [str(bins / "kube-proxy"), "--kubeconfig", str(kubeconfigs["proxy"]), "--hostname-override", NODE_NAME,
             "--proxy-mode", "iptables", "--cluster-cidr", POD_SUBNET, "--conntrack-max-per-core", "0",
             # No NodePorts on 127.0.0.1: no route_localnet, no KUBE-FIREWALL chain on the host.
             "--iptables-localhost-nodeports=false",
             "--metrics-bind-address", f"127.0.0.1:{free_port()}",
             "--healthz-bind-address", f"127.0.0.1:{free_port()}"],
            workdir / "kube-proxy.log",
        )  # fmt: skip

        # NetworkPolicy enforcement (tests/e2e/netpol.py); its chains go when it stops, or after.
        stack.callback(delete_netpol_chains)
        netpol = _spawn_node(
            stack,
            [sys.executable, "-m", "tests.e2e.netpol", "--kubeconfig", str(cp.kubeconfig), "--pod-cidr", POD_SUBNET],
            workdir / "netpol.log",
            {**os.environ, "PYTHONPATH": str(REPO)},
        )

        # containerd with runc and the gVisor shim, CNI bridge.
        (workdir / "cni" / "net.d").mkdir(parents=True)
        (workdir / "cni" / "net.d" / "10-mcpexec-e2e.conflist").write_text(json.dumps(cni_config(workdir), indent=2))
        runsc_toml = workdir / "runsc.toml"
        runsc_toml.write_text(runsc_config_toml(workdir, bins, platform))
        (workdir / "containerd").mkdir()
        config = workdir / "containerd" / "config.toml"
        config.write_text(containerd_config(workdir, runsc_toml))
        socket = workdir / "containerd" / "containerd.sock"
        env = {**os.environ, "PATH": f"{bins}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}
        containerd = _spawn_node(stack, ["containerd", "--config", str(config)], workdir / "containerd.log", env)
        _wait(socket.exists, 30, "containerd's socket", [containerd], workdir / "containerd.log")
        the_node = Node(cp=cp, name=NODE_NAME, workdir=workdir, bins=bins, containerd_socket=socket)
        archives = image_archives(bins)
        for archive in ("pause.tar", "busybox.tar", "coredns.tar"):
            the_node.import_image(archives / archive)

        # kubelet: registers the node, talks to containerd.
        kubelet_config = workdir / "kubelet-config.yaml"
        kubelet_config.write_text(yaml.safe_dump(kubelet_configuration(workdir, socket, ca, address)))
        # Stopped before containerd (ExitStack is LIFO), after every pod is gone.
        kubelet = _spawn_node(
            stack,
            [str(bins / "kubelet"), "--config", str(kubelet_config), "--kubeconfig", str(kubelet_kubeconfig),
             "--root-dir", str(workdir / "kubelet"), "--cert-dir", str(workdir / "kubelet" / "pki"),
             "--hostname-override", NODE_NAME, "--node-ip", address, "-v", "2"],
            workdir / "kubelet.log",
            env,
        )  # fmt: skip
        _drain(stack, cp.kubeconfig, kubectl_binary(), the_node)
        _wait(
            lambda: node_ready(cp),
            ready_timeout,
            f"node {NODE_NAME} Ready",
            [kubelet, containerd, scheduler, proxy, netpol],
            workdir / "kubelet.log",
        )
        create_runtime_class(cp)
        kubectl_apply(cp, coredns_manifests())
        _wait(
            lambda: deployment_available(cp, "kube-system", "coredns"),
            ready_timeout,
            "cluster DNS (CoreDNS) available",
            [kubelet, containerd, scheduler, proxy, netpol],
            workdir / "kubelet.log",
        )
        yield the_node
