"""A node leaves nothing behind on the machine, even with a gVisor pod still running when it stops."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.e2e.node import node
from tests.e2e.node_config import BUSYBOX_IMAGE
from tests.e2e.node_network import BRIDGE

pytestmark = pytest.mark.e2e


def test_node_stops_cleanly_with_a_gvisor_pod_running() -> None:
    with node() as the_node:
        config.load_kube_config(config_file=str(the_node.cp.kubeconfig))
        core = client.CoreV1Api()
        body = {
            "metadata": {"name": "sleeper"},
            "spec": {
                "runtimeClassName": "gvisor",
                "automountServiceAccountToken": False,
                "containers": [
                    {"name": "main", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never", "args": ["sleep 3600"]}
                ],
            },
        }
        core.create_namespaced_pod("default", body)
        deadline = time.monotonic() + 60
        while core.read_namespaced_pod("sleeper", "default").status.phase != "Running":
            assert time.monotonic() < deadline, "the pod did not start"
            time.sleep(0.2)
        workdir, cp_workdir = the_node.workdir, the_node.cp.workdir
        assert the_node.ctr("tasks", "ls", "-q").stdout.strip()
    leftovers = subprocess.run(["pgrep", "-af", str(workdir)], capture_output=True, text=True).stdout
    assert not leftovers.strip(), leftovers
    assert str(workdir) not in Path("/proc/self/mountinfo").read_text()
    assert not workdir.exists() and not cp_workdir.exists()
    assert subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode != 0
    nat = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True, check=True).stdout
    assert "mcpexec-e2e" not in nat
    assert "KUBE-" not in nat
    rules = subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    assert "KUBE-" not in rules
    assert "MCPEXEC-NP" not in rules
