"""MCPServer status as the gateway sees each server: Ready (connected, tools listed) and the discovered tools.

Every replica probes through its catalog connection and patches `status` only when what it would write
differs from what the resource already says, so replicas that agree write nothing and `kubectl get mcpservers`
shows Ready and the tool count. The conditions speak kstatus (mcpexec/api/conditions.py): a server seen for the first
time (or edited: a new generation) is `Ready=Unknown`, Reconciling, until its probe answers; an unreachable one stays
Reconciling (the gateway keeps probing); one the gateway refuses to serve (`InvalidSpec`, `NotServed`: a stdio
server outside the trusted namespaces) is Stalled, since nothing changes until someone edits it or the gateway's
settings.
"""

from __future__ import annotations

import asyncio
import logging

from kubernetes.client.exceptions import ApiException

from gateway.cluster.directory import KubeDirectory
from gateway.cluster.servers import ClusterServers, Refusal
from gateway.errors import GatewayError
from gateway.tools.catalog import Catalog
from mcpexec.api.conditions import Progress, merge_conditions, readiness
from mcpexec.api.reasons import Reason
from mcpexec.api.status import MCPServerStatus, ToolSummary

log = logging.getLogger("mcpexec.gateway.server_status")

MAX_TOOLS = 200  # bounded: a status is part of every read of the resource
DESCRIPTION_CHARS = 160
# A desired status without the tools keeps the last listed ones (an unreachable server's); tools set to None are
# removed (MCPServerStatus.patch, a merge patch): the tools of a server now refused.


def _summary(description: str | None) -> str:
    first = (description or "").strip().split("\n", 1)[0]
    return first if len(first) <= DESCRIPTION_CHARS else first[: DESCRIPTION_CHARS - 1] + "…"


def desired_status(tools: list[tuple[str, str | None]] | None, problem: str | None) -> MCPServerStatus:
    """The status for a probe's outcome: the tools (name, description) when listed, else the problem."""
    if problem is None:
        conditions = readiness(True, Progress.CURRENT, Reason.TOOLS_LISTED, f"{len(tools or [])} tools")
    else:
        conditions = readiness(False, Progress.IN_PROGRESS, Reason.UNREACHABLE, problem)
    if tools is None:
        return MCPServerStatus(conditions=conditions)
    listed = [ToolSummary(name=name, description=_summary(text)) for name, text in tools[:MAX_TOOLS]]
    return MCPServerStatus(conditions=conditions, tool_count=len(tools), tools=listed)


def first_seen_status() -> MCPServerStatus:
    """A server (or a generation of it) not probed yet."""
    message = "the gateway is connecting to the server"
    return MCPServerStatus(conditions=readiness(None, Progress.IN_PROGRESS, Reason.PROBING, message))


def refused_status(refusal: Refusal) -> MCPServerStatus:
    conditions = readiness(False, Progress.STALLED, refusal.reason, refusal.message)
    return MCPServerStatus(conditions=conditions, tool_count=None, tools=None)


def _comparable(status: MCPServerStatus) -> MCPServerStatus:
    """The status but for its conditions' lastTransitionTime."""
    conditions = [c.model_copy(update={"last_transition_time": None}) for c in status.conditions or []]
    return status.model_copy(update={"conditions": conditions})


class ServerStatusReporter:
    def __init__(self, directory: KubeDirectory, servers: ClusterServers, catalog: Catalog) -> None:
        self._directory = directory
        self._servers = servers
        self._catalog = catalog

    async def _probe(self, key: str) -> MCPServerStatus:
        try:
            tools = await self._catalog.probe(key)
        except GatewayError as exc:
            return desired_status(None, exc.message)
        return desired_status([(t.name, t.description) for t in tools], None)

    async def _write(self, key: str, desired: MCPServerStatus) -> bool:
        """Patch the server's status to `desired` (its generation stamped) unless it already says so."""
        current = MCPServerStatus.model_validate(self._servers.status(key))
        generation = self._servers.generation(key)
        status = MCPServerStatus(
            observed_generation=generation,
            conditions=merge_conditions(current.conditions or [], desired.conditions or [], generation),
            tool_count=(desired if "tool_count" in desired.model_fields_set else current).tool_count,
            tools=(desired if "tools" in desired.model_fields_set else current).tools,
        )
        if _comparable(status) == _comparable(current):
            return False
        namespace, name = key.split("/", 1)
        patch = status.patch()
        try:
            await asyncio.to_thread(self._directory.patch_mcp_server_status, namespace, name, patch)
        except ApiException as exc:  # deleted meanwhile, or no RBAC: said once per round, not fatal
            log.warning("patching MCPServer status failed", extra={"server": key, "status": exc.status})
            return False
        self._servers.remember_status(key, {k: v for k, v in patch.items() if v is not None})
        return True

    async def report_once(self) -> int:
        """Probe every served server, say why the others are not served; patch the statuses that changed. Returns
        how many servers' statuses were patched."""
        patched = 0
        for key in list(self._servers.specs()):
            first = self._servers.status(key).get("observedGeneration") != self._servers.generation(key)
            wrote_first = first and await self._write(key, first_seen_status())
            wrote = await self._write(key, await self._probe(key))
            patched += wrote_first or wrote
        for key, refusal in list(self._servers.refused().items()):
            patched += await self._write(key, refused_status(refusal))
        return patched

    async def report_forever(self, every_seconds: float) -> None:
        while True:
            await asyncio.sleep(every_seconds)
            await self.report_once()
