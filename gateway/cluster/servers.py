"""Cluster mode: the MCP servers are the MCPServer resources; keys are `namespace/name`.

The snapshot is re-listed as soon as a watch sees an MCPServer change (a task applied together with its
MCPServer finds it), and at least every `refresh_seconds` (header Secrets can change without an event).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from gateway.cluster.directory import KubeDirectory
from mcpexec.api.mcpserver import MCPServer, MCPServerSpec

log = logging.getLogger("mcpexec.gateway.servers")
WATCH_SECONDS = 5


def servers_from_resources(items: list[dict[str, Any]], stdio_namespaces: frozenset[str]) -> dict[str, MCPServer]:
    """Valid MCPServer resources by `namespace/name`; invalid ones are logged and left out, and so are stdio
    servers outside `stdio_namespaces`: whoever may create an MCPServer must not run commands in the gateway."""
    servers = {}
    for item in items:
        try:
            server = MCPServer.model_validate(item)
        except ValidationError as exc:
            log.warning("ignoring invalid MCPServer", extra={"metadata": item.get("metadata"), "error": str(exc)})
            continue
        if server.spec.transport == "stdio" and server.metadata.namespace not in stdio_namespaces:
            log.warning(
                "ignoring stdio MCPServer outside MCPEXEC_STDIO_SERVER_NAMESPACES",
                extra={"metadata": item.get("metadata")},
            )
            continue
        servers[f"{server.metadata.namespace}/{server.metadata.name}"] = server
    return servers


class ClusterServers:
    """A snapshot of MCPServer specs and their secret-backed headers, refreshed in the background."""

    def __init__(self, directory: KubeDirectory, refresh_seconds: float, stdio_namespaces: frozenset[str]) -> None:
        self._directory = directory
        self._stdio_namespaces = stdio_namespaces
        self._refresh_seconds = refresh_seconds
        self._specs: dict[str, MCPServerSpec] = {}
        self._headers: dict[str, dict[str, str]] = {}
        self._resource_version = ""
        self._statuses: dict[str, dict[str, Any]] = {}

    def specs(self) -> dict[str, MCPServerSpec]:
        return self._specs

    def headers(self, key: str) -> dict[str, str]:
        return self._headers.get(key, {})

    def status(self, key: str) -> dict[str, Any]:
        """The resource's status as last listed (or as this gateway last wrote it)."""
        return self._statuses.get(key, {})

    def remember_status(self, key: str, status: dict[str, Any]) -> None:
        self._statuses[key] = status

    def _load(self) -> tuple[dict[str, MCPServerSpec], dict[str, dict[str, str]], dict[str, dict[str, Any]], str]:
        items, resource_version = self._directory.mcp_servers()
        statuses = {f"{i['metadata']['namespace']}/{i['metadata']['name']}": i.get("status") or {} for i in items}
        servers = servers_from_resources(items, self._stdio_namespaces)
        headers: dict[str, dict[str, str]] = {}
        for key, server in servers.items():
            resolved = {}
            for header in server.spec.headers_from_secrets:
                ref = header.secret_key_ref
                try:
                    resolved[header.name] = self._directory.secret_value(server.metadata.namespace, ref.name, ref.key)
                except (ApiException, KeyError):
                    log.warning("header secret missing", extra={"server": key, "secret": ref.name, "key": ref.key})
            headers[key] = resolved
        return {k: s.spec for k, s in servers.items()}, headers, statuses, resource_version

    async def refresh(self) -> None:
        self._specs, self._headers, self._statuses, self._resource_version = await asyncio.to_thread(self._load)

    async def refresh_forever(self) -> None:
        listed = time.monotonic()
        while True:
            try:
                # Short watches: a blocked thread would hold up the gateway's shutdown until it returns.
                changed = await asyncio.to_thread(
                    self._directory.wait_for_mcp_server_change, self._resource_version, WATCH_SECONDS
                )
            except Exception as exc:  # 410 (resourceVersion expired), or the connection broke: list again
                log.warning("watching MCPServers failed", extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
                await asyncio.sleep(1)
                changed = True
            if not changed and time.monotonic() - listed < self._refresh_seconds:
                continue
            try:
                await self.refresh()
                listed = time.monotonic()
            except Exception as exc:  # the API server is away: keep serving the last snapshot, try again soon
                log.warning("listing MCPServers failed; keeping the last snapshot", extra={"error": type(exc).__name__})
                await asyncio.sleep(min(self._refresh_seconds, 5))
