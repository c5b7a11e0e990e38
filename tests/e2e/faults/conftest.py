"""One node and one release for the whole fault tier (a node and a chart install per module would cost CI a minute
each): the chart as a user installs it, its LLM a scripted endpoint on the host; a namespace with our demo CRM
server, the host's recording MCP server and a warm SandboxPool of both; a person's token for the execute API."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.faults.disruptions import reap_restarted_kubelets
from tests.e2e.faults.recorder import Recorder, recorder
from tests.e2e.faults.release_state import wait_release_ready
from tests.e2e.node import Node, node
from tests.e2e.node_network import host_ip
from tests.e2e.pods import create_namespace
from tests.e2e.release import API_VERSION, GROUP, RELEASE_NAMESPACE, crm_server, install_release
from tests.e2e.sessions import create_pool, session_user, wait_pool
from tests.support.scripted_llm import ScriptedLLM

POOL = "faults"
TEMPLATE = {
    "mcpServers": ["crm", "rec"],
    "tools": {"allow": ["crm/*", "rec/*"]},
    "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
}
LLM_KEY_SECRET = "scripted-llm"
SLOW = "slow"  # a prompt containing this keeps the scripted model busy for SLOW_SECONDS
SLOW_SECONDS = 25


@dataclass(frozen=True)
class Workspace:
    namespace: str
    crm_ip: str  # the demo CRM server's pod: its outbox is asked from the host
    token: str  # alice's, a person with the session-user role in the namespace
    recorder: Recorder
    llm: ScriptedLLM

    def llm_requests(self, text: str) -> int:
        """How many requests the model got whose last message holds `text`."""
        return sum(text in str(body["messages"][-1]["content"]) for _, body in self.llm.requests)


def _reply(body: dict[str, Any]) -> str:
    if SLOW in str(body["messages"][-1]["content"]):
        time.sleep(SLOW_SECONDS)
    return "ok"


@pytest.fixture(scope="package")
def e2e_node() -> Iterator[Node]:
    with node() as the_node, the_node.cp.as_default_client():
        yield the_node
    reap_restarted_kubelets()


@pytest.fixture(scope="package")
def llm(e2e_node: Node) -> Iterator[ScriptedLLM]:
    with ScriptedLLM(_reply, host=host_ip()) as scripted:
        yield scripted


@pytest.fixture(scope="package")
def release(e2e_node: Node, llm: ScriptedLLM) -> str:
    core: Any = client.CoreV1Api()
    core.create_namespace({"metadata": {"name": RELEASE_NAMESPACE}})
    key = base64.b64encode(b"sk-scripted").decode()
    core.create_namespaced_secret(RELEASE_NAMESPACE, {"metadata": {"name": LLM_KEY_SECRET}, "data": {"api-key": key}})
    installed = install_release(
        e2e_node, "--set", f"llm.baseUrl={llm.url}", "--set", "llm.model=scripted",
        "--set", f"llm.apiKeySecret.name={LLM_KEY_SECRET}",
    )  # fmt: skip
    wait_release_ready()
    return installed


@pytest.fixture(scope="package")
def workspace(release: str, llm: ScriptedLLM, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    core, custom = client.CoreV1Api(), client.CustomObjectsApi()
    namespace = create_namespace(core)
    with recorder(Path(tmp_path_factory.mktemp("recorder"))) as rec:
        crm_ip = crm_server(core, custom, namespace)
        custom.create_namespaced_custom_object(GROUP, API_VERSION, namespace, "mcpservers", {
            "apiVersion": f"{GROUP}/{API_VERSION}", "kind": "MCPServer", "metadata": {"name": "rec"},
            "spec": {"transport": "streamableHttp", "url": rec.url},
        })  # fmt: skip
        create_pool(namespace, POOL, 2, TEMPLATE)
        wait_pool(namespace, POOL, 2)
        yield Workspace(namespace, crm_ip, session_user(namespace, "alice"), rec, llm)
