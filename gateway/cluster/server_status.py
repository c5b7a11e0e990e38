"""MCPServer status as the gateway sees each server: Ready (connected, tools listed) and the discovered tools.

Every replica probes through its catalog connection and patches `status` only when what it would write
differs from what the resource already says, so replicas that agree write nothing and `kubectl get mcpservers`
shows Ready and the tool count.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kubernetes.client.exceptions import ApiException

from gateway.cluster.directory import KubeDirectory
from gateway.cluster.servers import ClusterServers
from gateway.errors import GatewayError
from gateway.tools.catalog import Catalog
from mcpexec.api.conditions import condition, merge_conditions

log = logging.getLogger("mcpexec.gateway.server_status")

MAX_TOOLS = 200  # bounded: a status is part of every read of the resource
DESCRIPTION_CHARS = 160


def _summary(description: str | None) -> str:
    first = (description or "").strip().split("\n", 1)[0]
    return first if len(first) <= DESCRIPTION_CHARS else first[: DESCRIPTION_CHARS - 1] + "…"


def desired_status(tools: list[tuple[str, str | None]] | None, problem: str | None) -> dict[str, Any]:
    """The status for a probe's outcome: the tools (name, description) when listed, else the problem."""
    ready = problem is None
    message = f"{len(tools or [])} tools" if problem is None else problem
    status: dict[str, Any] = {
        "conditions": [condition("Ready", ready, "ToolsListed" if ready else "Unreachable", message)]
    }
    if tools is not None:
        status["toolCount"] = len(tools)
        status["tools"] = [{"name": name, "description": _summary(text)} for name, text in tools[:MAX_TOOLS]]
    return status


def _without_times(status: dict[str, Any]) -> dict[str, Any]:
    conditions = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions", [])]
    return {**status, "conditions": conditions}


class ServerStatusReporter:
    def __init__(self, directory: KubeDirectory, servers: ClusterServers, catalog: Catalog) -> None:
        self._directory = directory
        self._servers = servers
        self._catalog = catalog

    async def _probe(self, key: str) -> dict[str, Any]:
        try:
            tools = await self._catalog.probe(key)
        except GatewayError as exc:
            return desired_status(None, exc.message)
        return desired_status([(t.name, t.description) for t in tools], None)

    async def report_once(self) -> int:
        """Probe every server; patch the statuses that changed. Returns how many were patched."""
        patched = 0
        for key in list(self._servers.specs()):
            status = await self._probe(key)
            current = self._servers.status(key)
            if _without_times(status) == _without_times(current):
                continue
            status["conditions"] = merge_conditions(current.get("conditions", []), status["conditions"])
            namespace, name = key.split("/", 1)
            try:
                await asyncio.to_thread(self._directory.patch_mcp_server_status, namespace, name, status)
            except ApiException as exc:  # deleted meanwhile, or no RBAC: said once per round, not fatal
                log.warning("patching MCPServer status failed", extra={"server": key, "status": exc.status})
                continue
            self._servers.remember_status(key, status)
            patched += 1
        return patched

    async def report_forever(self, every_seconds: float) -> None:
        while True:
            await asyncio.sleep(every_seconds)
            await self.report_once()
