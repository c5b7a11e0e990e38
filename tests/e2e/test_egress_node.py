"""Controlled egress on the node (issue 34, docs/egress.md): a pooled task `pip install`s a package from a test
package index through the gateway's forward proxy, while its NetworkPolicy still blocks direct egress.

The index is a PyPI-style simple index over HTTPS (a test CA) on this machine's own address, outside the cluster's
networks: the gateway's pod reaches it, a sandbox pod may not (a control pod with the pool's labels, under the same
NetworkPolicy, is blocked; the same pod without them is not). The admin (the chart's `egress` values) grants two names
of it to the test namespace; the pool's template narrows that to one, which the task asks for. The names reach the
index through the chart's admin escape hatches (`egress.resolve`, like /etc/hosts, and `egress.allowedAddresses`:
the node's address is not a public one), as the integration tests' do on loopback. The runtime image has no pip: the
task fetches pip's own wheel from the index through the proxy and runs pip from it. The other name, granted to the
namespace but not to the pool, is refused by the proxy (403), and a task asking for it is refused at admission."""

from __future__ import annotations

import ensurepip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller.naming import pool_labels
from tests.e2e.node import Node
from tests.e2e.node_artifacts import PROJECT_VERSION
from tests.e2e.node_network import POD_SUBNET, SERVICE_CIDR, host_ip
from tests.e2e.pods import create_namespace, pod, run_to_completion
from tests.e2e.release import API_VERSION, GROUP, PLURAL, gateway_records, install_release, wait_task
from tests.e2e.sessions import create_pool, wait_pool
from tests.e2e.test_pools import TEMPLATE
from tests.support.egress_servers import CaFiles, file_server, make_ca, simple_index

pytestmark = pytest.mark.e2e

GRANTED, OTHER = "pkgs.example.test", "other.example.test"
TEAM = "egress-team"  # the namespace the admin grants egress to
POOL = "egress"

# Runs in the task's sandbox with SETTINGS (the CA, the index's port and address, pip's wheel) defined before it.
INSTALL = """
import os, socket, ssl, subprocess, sys, urllib.request
index = f"https://{SETTINGS['granted']}:{SETTINGS['port']}"
open("/workspace/ca.pem", "w").write(SETTINGS["ca"])
context = ssl.create_default_context(cafile="/workspace/ca.pem")
print("proxy", os.environ["HTTPS_PROXY"].startswith("http://127.0.0.1:"))
try:
    socket.create_connection((SETTINGS["address"], SETTINGS["port"]), timeout=5).close()
    print("direct open")
except OSError:
    print("direct closed")
wheel = f"/workspace/{SETTINGS['pip']}"
with open(wheel, "wb") as out:
    out.write(urllib.request.urlopen(f"{index}/files/{SETTINGS['pip']}", context=context).read())
pip = [sys.executable, f"{wheel}/pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--retries", "0",
       "--target", "/workspace/lib", "--cert", "/workspace/ca.pem"]
done = subprocess.run([*pip, "--index-url", f"{index}/simple", "egresspkg"], capture_output=True, text=True)
print("pip", done.returncode, done.stderr[-1500:])
sys.path.insert(0, "/workspace/lib")
import egresspkg
print("answer", egresspkg.ANSWER)
try:
    urllib.request.urlopen(f"https://{SETTINGS['other']}:{SETTINGS['port']}/simple/egresspkg/", context=context)
    print("OTHER REACHED")
except OSError as exc:
    print("other refused:", exc)
"""
# A control pod: straight to the index, no proxy.
DIRECT = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
    print("direct open")
except OSError:
    print("direct closed")
"""


def _pip_wheel() -> Path:
    """The wheel of pip that the Python running the tests bundles (ensurepip's): what the task installs pip from."""
    (wheel,) = (Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl")
    return wheel


@pytest.fixture(scope="module")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> CaFiles:
    return make_ca(tmp_path_factory.mktemp("ca"), [GRANTED, OTHER])


@pytest.fixture(scope="module")
def index_port(tmp_path_factory: pytest.TempPathFactory, test_ca: CaFiles) -> Iterator[int]:
    """A PyPI-style index (egresspkg, and pip's wheel beside it) over HTTPS on the node's address."""
    root = tmp_path_factory.mktemp("index")
    simple_index(root, "egresspkg", "1.0.0", "ANSWER = 42\n")
    shutil.copy(_pip_wheel(), root / "files")
    with file_server(root, test_ca, host=host_ip()) as port:
        yield port


@pytest.fixture(scope="module")
def release(e2e_node: Node, index_port: int, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The chart with the admin's egress: both names in the ceiling and in the team namespace's grant, the cluster's
    networks refused, and the names led to the node's address (which the proxy may reach, as an internal mirror)."""
    grant = {"hosts": [GRANTED, OTHER], "ports": [index_port]}
    egress = {
        **grant,
        "namespaces": {TEAM: grant},
        "clusterNetworks": [POD_SUBNET, SERVICE_CIDR],
        "resolve": {GRANTED: [host_ip()], OTHER: [host_ip()]},
        "allowedAddresses": [f"{host_ip()}/32"],
    }
    values = tmp_path_factory.mktemp("values") / "egress.json"
    values.write_text(json.dumps({"egress": egress}))
    return install_release(e2e_node, "-f", str(values))


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    yield create_namespace(core, TEAM)
    core.delete_namespace(TEAM)


def _control(name: str, labels: dict[str, str], port: int) -> dict[str, Any]:
    control = pod(name, "")
    control["metadata"]["labels"].update(labels)
    control["spec"]["containers"][0].update(
        image=f"docker.io/mcpexec/runtime:{PROJECT_VERSION}",
        command=["python3", "-c", DIRECT, host_ip(), str(port)],
        args=None,
    )
    return control


def _task(name: str, egress: dict[str, Any], code: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{API_VERSION}", "kind": "AgentTask", "metadata": {"name": name},
        "spec": {"poolRef": {"name": POOL}, "egress": egress, "timeoutSeconds": 240, "code": code},
    }  # fmt: skip


def test_a_pooled_task_pip_installs_through_the_gateway_while_its_network_policy_blocks_direct_egress(
    e2e_node: Node, release: str, core: client.CoreV1Api, namespace: str, test_ca: CaFiles, index_port: int
) -> None:
    custom = client.CustomObjectsApi()
    granted = {"hosts": [GRANTED], "ports": [index_port]}
    create_pool(namespace, POOL, 1, {"resources": TEMPLATE["resources"], "egress": granted})
    wait_pool(namespace, POOL, 1)

    # Under the pool's NetworkPolicy (the pool's labels), the index is out of reach; the same pod without them
    # reaches it: the block is the policy, not a dead host.
    assert "direct closed" in run_to_completion(core, namespace, _control("confined", pool_labels(POOL), index_port))
    assert "direct open" in run_to_completion(core, namespace, _control("unconfined", {}, index_port))

    settings = {"granted": GRANTED, "other": OTHER, "port": index_port, "address": host_ip(),
                "ca": test_ca.ca_file.read_text(), "pip": _pip_wheel().name}  # fmt: skip
    custom.create_namespaced_custom_object(
        GROUP, API_VERSION, namespace, PLURAL, _task("install", granted, f"SETTINGS = {settings!r}\n{INSTALL}")
    )
    status = wait_task(custom, "install", namespace, timeout=240)["status"]
    assert status["phase"] == "Succeeded", status
    assert status["launchType"] == "Warm", status
    lines = status["result"].splitlines()
    assert "proxy True" in lines, status["result"]
    assert "direct closed" in lines, "the task's own NetworkPolicy blocks the index too"
    assert "pip 0" in status["result"] and "answer 42" in lines, status["result"]
    refused = next(line for line in lines if line.startswith("other refused:"))
    assert "403" in refused and "not in the task's egress grant" in refused, refused
    # The gateway's audit log has every connection of the task: to the index's address, and the refusal.
    audited = [
        record
        for records in gateway_records(core, release).values()
        for record in records
        if record.get("message") == "egress" and record.get("task") == f"{TEAM}/install"
    ]
    assert {(GRANTED, "done"), (OTHER, "not_granted")} <= {(r["host"], r["verdict"]) for r in audited}, audited
    assert {r["address"] for r in audited if r["verdict"] == "done"} == {host_ip()}, audited

    # Asking for the other name, which the namespace has but the pool's template does not: refused at admission.
    wider = {"hosts": [OTHER], "ports": [index_port]}
    custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, PLURAL, _task("wider", wider, "print(1)"))
    refused_task = wait_task(custom, "wider", namespace)["status"]
    accepted = next(c for c in refused_task["conditions"] if c["type"] == "Accepted")
    assert (refused_task["phase"], accepted["reason"]) == ("Failed", "PolicyWidened"), refused_task
    assert f"'{OTHER}'" in accepted["message"] and "the pool's template" in accepted["message"], accepted
