"""The e2e node's pod network: the CNI bridge and its addresses, and the removal of what the bridge plugin, kube-proxy
and the NetworkPolicy enforcer leave in iptables."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

BRIDGE = "mcpe2e0"


POD_SUBNET = "10.88.0.0/24"


BRIDGE_IP = "10.88.0.1"


SERVICE_CIDR = "10.96.0.0/16"  # control_plane()'s --service-cluster-ip-range


DNS_SERVICE_IP = "10.96.0.10"


CLUSTER_DOMAIN = "cluster.local"


def host_ip() -> str:
    """The address of the default route's interface: the node's InternalIP (kubelet refuses loopback)."""
    routes = json.loads(subprocess.run(["ip", "-j", "route", "get", "1.1.1.1"], capture_output=True, text=True).stdout)
    return str(routes[0]["prefsrc"])


def cni_config(workdir: Path) -> dict[str, object]:
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


def delete_bridge() -> None:
    subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)


def delete_netpol_chains() -> None:
    from tests.e2e import netpol

    dump = subprocess.run(["iptables-save", "-t", "filter"], capture_output=True, text=True).stdout
    chains = {line[1:].split()[0] for line in dump.splitlines() if line.startswith(f":{netpol.MAIN}-")}
    netpol.cleanup(chains, POD_SUBNET)


def delete_kube_firewall() -> None:
    """kube-proxy leaves the (empty, with localhost NodePorts off) KUBE-FIREWALL chain and its jumps."""
    for parent in ("INPUT", "OUTPUT"):
        subprocess.run(["iptables", "-D", parent, "-j", "KUBE-FIREWALL"], capture_output=True)
    subprocess.run(["iptables", "-F", "KUBE-FIREWALL"], capture_output=True)
    subprocess.run(["iptables", "-X", "KUBE-FIREWALL"], capture_output=True)


def delete_cni_leftovers() -> None:
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
