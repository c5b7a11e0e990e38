"""The e2e node's configuration files: the kubelet's client CA, containerd (runc and the gVisor shim), runsc, the
kubelet."""

from __future__ import annotations

import shutil
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from tests.e2e.node_artifacts import CNI_BIN_DIR
from tests.e2e.node_network import CLUSTER_DOMAIN, DNS_SERVICE_IP
from tests.support.certificates import ca_certificate, certificate
from tests.support.components import free_port

NODE_NAME = "mcpexec-e2e"


PAUSE_IMAGE = "localhost/mcpexec-e2e/pause:1"


BUSYBOX_IMAGE = "localhost/mcpexec-e2e/busybox:1"


COREDNS_IMAGE = "localhost/mcpexec-e2e/coredns:1"


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def write_client_ca(directory: Path, client_cn: str, client_org: str) -> tuple[Path, Path, Path]:
    """A CA and one client certificate it signed; returns (ca.crt, client.crt, client.key)."""
    ca_key, client_key = new_rsa_key(), new_rsa_key()
    ca = ca_certificate("mcpexec-e2e-kubelet-client-ca", ca_key)
    client_name = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, client_org), x509.NameAttribute(NameOID.COMMON_NAME, client_cn)]
    )
    client_auth = x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH])
    client = certificate(client_name, client_key.public_key(), ca.subject, ca_key, client_auth)
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "ca.crt", directory / "client.crt", directory / "client.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(client.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(pem_key(client_key))
    return paths


def containerd_config(workdir: Path, runsc_toml: Path) -> str:
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


def runsc_config_toml(workdir: Path, bins: Path, platform: str) -> str:
    logs = workdir / "logs" / "runsc"
    return f"""binary_name = "{bins / "runsc"}"
root = "{workdir / "runsc-root"}"
log_path = "{logs}/%ID%/shim.log"
log_level = "info"

[runsc_config]
  platform = "{platform}"
  debug-log = "{logs}/%ID%/gvisor.%COMMAND%.log"
"""


def kubelet_configuration(workdir: Path, socket: Path, client_ca: Path, address: str) -> dict[str, object]:
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
        # emptyDir usage is measured this often (default 1m): a task over its workspace size is evicted in seconds.
        "volumeStatsAggPeriod": "5s",
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
