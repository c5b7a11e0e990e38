"""A real single-node Kubernetes cluster on this machine whose kubelet runs pods under gVisor.

On top of tests/support/control_plane.py (etcd, kube-apiserver, kube-controller-manager) this starts
kube-scheduler, containerd (its own config, root, state and socket; runc and the gVisor shim as
runtimes; CNI bridge network), and a kubelet that registers the node and waits until it is Ready; the
RuntimeClass `gvisor` (handler `runsc`) is created. Everything lives under one temporary directory and
is stopped and removed afterwards, including the pods' sandboxes, mounts and the CNI bridge.

Binaries: tests/e2e/build-node.sh (kubelet, kube-scheduler, containerd-shim-runsc-v1, runsc from the Go
module proxy, cached); containerd, runc and the CNI plugins are Debian's. One node at a time per machine
(a lock file): the bridge and its subnet are fixed.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from tests.support.components import CACHE_ROOT, REPO, free_port
from tests.support.control_plane import ControlPlane, _write_kubeconfig, control_plane, spawn

E2E = REPO / "tests" / "e2e"
PROJECT_VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
NODE_NAME = "mcpexec-e2e"
CNI_BIN_DIR = Path("/usr/lib/cni")
BRIDGE = "mcpe2e0"
POD_SUBNET = "10.88.0.0/24"
BRIDGE_IP = "10.88.0.1"
PAUSE_IMAGE = "localhost/mcpexec-e2e/pause:1"
BUSYBOX_IMAGE = "localhost/mcpexec-e2e/busybox:1"
COREDNS_IMAGE = "localhost/mcpexec-e2e/coredns:1"
SERVICE_CIDR = "10.96.0.0/16"  # control_plane()'s --service-cluster-ip-range
DNS_SERVICE_IP = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"
LOCK = Path("/run/mcpexec-e2e-node.lock")
# Where the logs of a node go when it failed (or always, with MCPEXEC_E2E_KEEP_LOGS=1).
LOGS_KEPT = Path(tempfile.gettempdir()) / "mcpexec-e2e-logs"
DEBIAN_PACKAGES = {
    "containerd": "containerd",
    "runc": "runc",
    "containernetworking-plugins": "bridge",
    "iptables": "iptables",
    "conntrack": "conntrack",
}


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


def _run(cmd: Sequence[str], what: str) -> str:
    out = subprocess.run(list(cmd), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{what} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    return out.stdout.strip().splitlines()[-1]


def node_binaries() -> Path:
    """kubelet, kube-scheduler, containerd-shim-runsc-v1 and runsc: built once from the Go module proxy."""
    return Path(_run(["bash", str(E2E / "build-node.sh")], "tests/e2e/build-node.sh"))


def image_archives(bins: Path) -> Path:
    """pause.tar, busybox.tar and coredns.tar (docker-archive), built once with buildah."""
    return Path(_run(["bash", str(E2E / "images" / "build.sh"), str(bins)], "tests/e2e/images/build.sh"))


def project_image(name: str) -> Path:
    """The docker-archive of mcpexec/<name> (runtime, controller, gateway) built from the current sources:
    images/build-rootfs.sh rebuilds only when the image's inputs changed."""
    subprocess.run(["bash", str(REPO / "images" / "build-rootfs.sh"), name], check=True)
    return CACHE_ROOT / "images" / f"{name}-{PROJECT_VERSION}.tar"


def _ensure_debian_packages() -> None:
    missing = [
        pkg for pkg, probe in DEBIAN_PACKAGES.items() if not (shutil.which(probe) or (CNI_BIN_DIR / probe).exists())
    ]
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env)


def host_ip() -> str:
    """The address of the default route's interface: the node's InternalIP (kubelet refuses loopback)."""
    routes = json.loads(subprocess.run(["ip", "-j", "route", "get", "1.1.1.1"], capture_output=True, text=True).stdout)
    return str(routes[0]["prefsrc"])


# --- certificates: the apiserver authenticates to the kubelet (logs, exec) with a client certificate.


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def _write_client_ca(directory: Path, client_cn: str, client_org: str) -> tuple[Path, Path, Path]:
    """A CA and one client certificate it signed; returns (ca.crt, client.crt, client.key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, client_key = _key(), _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcpexec-e2e-kubelet-client-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    client = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, client_org),
                    x509.NameAttribute(NameOID.COMMON_NAME, client_cn),
                ]
            )
        )
        .issuer_name(ca_name)
        .public_key(client_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "ca.crt", directory / "client.crt", directory / "client.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(client.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(_pem_key(client_key))
    return paths


# --- configuration files.


def _cni_config(workdir: Path) -> dict[str, object]:
    return {
        "cniVersion": "1.0.0",
        "name": "mcpexec-e2e",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET, "gateway": BRIDGE_IP}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(workdir / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def _containerd_config(workdir: Path, runsc_toml: Path) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{workdir / "containerd" / "root"}"
state = "{workdir / "containerd" / "state"}"
oom_score = 0

[grpc]
  address = "{workdir / "containerd" / "containerd.sock"}"

[ttrpc]
  address = "{workdir / "containerd" / "containerd.sock.ttrpc"}"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{workdir / "containerd" / "opt"}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # No CAP_SYS_RESOURCE here: no process may lower its oom_score_adj (the kubelet asks -998 for the pod
  # sandbox, -997 for Guaranteed pods); containerd clamps them to its own score instead.
  restrict_oom_score_adj = true

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
  discard_unpacked_layers = false

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  BinaryName = "{shutil.which("runc") or "runc"}"
  SystemdCgroup = false

[{cri}.containerd.runtimes.runsc]
  runtime_type = "io.containerd.runsc.v1"

[{cri}.containerd.runtimes.runsc.options]
  TypeUrl = "io.containerd.runsc.v1.options"
  ConfigPath = "{runsc_toml}"

[{cri}.cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{workdir / "cni" / "net.d"}"
  max_conf_num = 1
"""


def _runsc_toml(workdir: Path, bins: Path, platform: str) -> str:
    logs = workdir / "logs" / "runsc"
    return f"""binary_name = "{bins / "runsc"}"
root = "{workdir / "runsc-root"}"
log_path = "{logs}/%ID%/shim.log"
log_level = "info"

[runsc_config]
  platform = "{platform}"
  debug-log = "{logs}/%ID%/gvisor.%COMMAND%.log"
"""


def _kubelet_config(workdir: Path, socket: Path, client_ca: Path, address: str) -> dict[str, object]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # This machine has cgroup v1 only; kubelet 1.34 still runs there when told to.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{socket}",
        "address": address,
        "port": free_port(),
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": free_port(),
        # The apiserver's client certificate (logs, exec) is checked; bearer tokens by TokenReview.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(client_ca)},
        },
        "authorization": {"mode": "Webhook"},
        "failSwapOn": False,
        "resolvConf": "/etc/resolv.conf",
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "serializeImagePulls": False,
        # Nothing on this shared machine should make the node evict pods or delete imported images.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 50,
        "nodeStatusUpdateFrequency": "4s",
        "runtimeRequestTimeout": "4m",
        "shutdownGracePeriod": "0s",
        "containerLogMaxSize": "10Mi",
        "podLogsDir": str(workdir / "pod-logs"),
        # No KUBE-FIREWALL / canary chains left in the host's iptables (kube-proxy makes what it needs).
        "makeIPTablesUtilChains": False,
    }


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


# --- teardown of what the kubelet and containerd leave behind.


def _processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line names this node's directory: shims and runsc it started (never others)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                pids.append(int(entry.name))
    return pids


def _kill_leftovers(workdir: Path) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _processes_mentioning(str(workdir))
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while pids and time.monotonic() < deadline and _processes_mentioning(str(workdir)):
            time.sleep(0.1)


def _unmount_under(workdir: Path) -> None:
    prefix = str(workdir)
    mounts = [
        line.split()[4].replace("\\040", " ")
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(prefix)
    ]
    for mountpoint in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mountpoint], capture_output=True)


def _keep_logs(workdirs: Sequence[Path]) -> Path:
    dest = LOGS_KEPT / time.strftime("%Y%m%d-%H%M%S")
    for directory in workdirs:
        for log in [*directory.glob("*.log"), *directory.glob("logs/**/*.log")]:
            target = dest / log.relative_to(directory)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(log, target)
    return dest


def _delete_bridge() -> None:
    subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)


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


def _delete_netpol_chains() -> None:
    from tests.e2e import netpol

    dump = subprocess.run(["iptables-save", "-t", "filter"], capture_output=True, text=True).stdout
    chains = {line[1:].split()[0] for line in dump.splitlines() if line.startswith(f":{netpol.MAIN}-")}
    netpol.cleanup(chains, POD_SUBNET)


def _delete_kube_firewall() -> None:
    """kube-proxy leaves the (empty, with localhost NodePorts off) KUBE-FIREWALL chain and its jumps."""
    for parent in ("INPUT", "OUTPUT"):
        subprocess.run(["iptables", "-D", parent, "-j", "KUBE-FIREWALL"], capture_output=True)
    subprocess.run(["iptables", "-F", "KUBE-FIREWALL"], capture_output=True)
    subprocess.run(["iptables", "-X", "KUBE-FIREWALL"], capture_output=True)


def _delete_cni_leftovers() -> None:
    """Safety net: the NAT rules of CNI DELs that never ran or did not finish (pods still running when the
    node died): every rule and chain of the bridge plugin that names this network."""
    dump = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True).stdout
    marker = 'name: \\"mcpexec-e2e\\"'
    chains = set()
    for line in dump.splitlines():
        if line.startswith("-A ") and marker in line:
            rule = shlex.split(line)
            if rule[1].startswith("CNI-"):
                chains.add(rule[1])
            else:
                subprocess.run(["iptables", "-t", "nat", "-D", *rule[1:]], capture_output=True)
    for chain in chains:
        subprocess.run(["iptables", "-t", "nat", "-F", chain], capture_output=True)
        subprocess.run(["iptables", "-t", "nat", "-X", chain], capture_output=True)


def kubectl_binary() -> Path | None:
    from tests.support.components import CACHE_ROOT

    candidates = [*CACHE_ROOT.glob("k8s-tools-*/kubectl")]
    found = shutil.which("kubectl")
    if found:
        candidates.append(Path(found))
    return candidates[0] if candidates else None


@contextmanager
def node(platform: str = "systrap", ready_timeout: float = 120) -> Iterator[Node]:
    """Start a whole single-node cluster; yield it once the node is Ready; remove every trace after."""
    _ensure_debian_packages()
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
    ca, client_crt, client_key = _write_client_ca(workdir / "pki", "kube-apiserver-kubelet-client", "system:masters")
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
        stack.callback(_delete_bridge)
        stack.callback(_delete_cni_leftovers)
        stack.callback(_delete_kube_firewall)
        stack.callback(_unmount_under, workdir)
        stack.callback(_kill_leftovers, workdir)
        cp = stack.enter_context(cp_cm)

        def keep_logs(exc_type: object, exc: BaseException | None, tb: object) -> None:
            if exc is not None or os.environ.get("MCPEXEC_E2E_KEEP_LOGS") == "1":
                kept = _keep_logs([workdir, cp.workdir])
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
        stack.callback(_delete_netpol_chains)
        netpol = _spawn_node(
            stack,
            [sys.executable, "-m", "tests.e2e.netpol", "--kubeconfig", str(cp.kubeconfig), "--pod-cidr", POD_SUBNET],
            workdir / "netpol.log",
            {**os.environ, "PYTHONPATH": str(REPO)},
        )

        # containerd with runc and the gVisor shim, CNI bridge.
        (workdir / "cni" / "net.d").mkdir(parents=True)
        (workdir / "cni" / "net.d" / "10-mcpexec-e2e.conflist").write_text(json.dumps(_cni_config(workdir), indent=2))
        runsc_toml = workdir / "runsc.toml"
        runsc_toml.write_text(_runsc_toml(workdir, bins, platform))
        (workdir / "containerd").mkdir()
        config = workdir / "containerd" / "config.toml"
        config.write_text(_containerd_config(workdir, runsc_toml))
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
        kubelet_config.write_text(yaml.safe_dump(_kubelet_config(workdir, socket, ca, address)))
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
            lambda: _node_ready(cp),
            ready_timeout,
            f"node {NODE_NAME} Ready",
            [kubelet, containerd, scheduler, proxy, netpol],
            workdir / "kubelet.log",
        )
        _create_runtime_class(cp)
        _kubectl_apply(cp, _coredns_manifests())
        _wait(
            lambda: _deployment_available(cp, "kube-system", "coredns"),
            ready_timeout,
            "cluster DNS (CoreDNS) available",
            [kubelet, containerd, scheduler, proxy, netpol],
            workdir / "kubelet.log",
        )
        yield the_node


def _api_get(cp: ControlPlane, path: str) -> dict[str, object] | None:
    import ssl

    ctx = ssl.create_default_context(cafile=str(cp.workdir / "certs" / "apiserver.crt"))
    ctx.check_hostname = False
    request = urllib.request.Request(f"{cp.url}{path}", headers={"Authorization": f"Bearer {cp.token}"})
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=5) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except OSError:
        return None


def _node_ready(cp: ControlPlane) -> bool:
    found = _api_get(cp, f"/api/v1/nodes/{NODE_NAME}")
    if not found:
        return False
    conditions = found.get("status", {}).get("conditions", [])  # type: ignore[union-attr]
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _create_runtime_class(cp: ControlPlane) -> None:
    body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc"}
    _kubectl_apply(cp, [body])


def _kubectl_apply(cp: ControlPlane, objects: list[dict[str, object]]) -> None:
    kubectl = kubectl_binary()
    if kubectl is None:
        raise RuntimeError("kubectl not found: run `make install`")
    out = subprocess.run(
        [str(kubectl), "--kubeconfig", str(cp.kubeconfig), "apply", "-f", "-"],
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
        text=True,
        capture_output=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"kubectl apply failed: {out.stderr.strip()}")


def _deployment_available(cp: ControlPlane, namespace: str, name: str) -> bool:
    found = _api_get(cp, f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    return bool(found and found.get("status", {}).get("availableReplicas"))  # type: ignore[union-attr]


COREFILE = f""".:53 {{
    errors
    health :8080
    ready :8181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    forward . /etc/resolv.conf
    cache 30
}}
"""


def _coredns_manifests() -> list[dict[str, object]]:
    """Cluster DNS as a cluster has it: CoreDNS pods (k8s-app=kube-dns) behind the kube-dns Service."""
    ns, labels = "kube-system", {"k8s-app": "kube-dns"}
    meta = {"name": "coredns", "namespace": ns}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "mcpexec-e2e:coredns"},
            "rules": [
                {"apiGroups": [""], "resources": ["services", "pods", "namespaces"], "verbs": ["list", "watch"]},
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "mcpexec-e2e:coredns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "mcpexec-e2e:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": ns}],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"Corefile": COREFILE}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**meta, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": "coredns",
                        "dnsPolicy": "Default",
                        "containers": [
                            {
                                "name": "coredns",
                                "image": COREDNS_IMAGE,
                                "imagePullPolicy": "Never",
                                "args": ["-conf", "/etc/coredns/Corefile"],
                                "ports": [
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                ],
                                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}, "periodSeconds": 1},
                                "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns"}],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": ns, "labels": labels},
            "spec": {
                "selector": labels,
                "clusterIP": DNS_SERVICE_IP,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                ],
            },
        },
    ]
