"""Cluster mode: the MCP servers are the MCPServer resources; keys are `namespace/name`.

The snapshot is re-listed as soon as a watch sees an MCPServer change (a task applied together with its
MCPServer finds it), and at least every `refresh_seconds` (header Secrets can change without an event).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from gateway.cluster.directory import KubeDirectory
from mcpexec.api.mcpserver import MCPServer, MCPServerSpec
from mcpexec.api.meta import validation_message
from mcpexec.api.reasons import Reason

log = logging.getLogger("mcpexec.gateway.servers")
WATCH_SECONDS = 5


@dataclass(frozen=True)
class Refusal:
    """Why the gateway does not serve an MCPServer (said in its status: Stalled, Ready=False)."""

    reason: Literal[Reason.INVALID_SPEC, Reason.NOT_SERVED]
    message: str


@dataclass
class Listing:
    served: dict[str, MCPServer] = field(default_factory=dict)
    refused: dict[str, Refusal] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)


def classify(items: list[dict[str, Any]], stdio_namespaces: frozenset[str]) -> Listing:
    """MCPServer resources by `namespace/name`: the valid ones served, the others refused with why: invalid ones, and
    stdio servers outside `stdio_namespaces` (whoever may create an MCPServer must not run commands in the
    gateway)."""
    listing = Listing()
    for item in items:
        meta = item.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        listing.generations[key] = int(meta.get("generation") or 1)
        try:
            server = MCPServer.model_validate(item)
        except ValidationError as exc:
            log.warning("ignoring invalid MCPServer", extra={"metadata": meta, "error": str(exc)})
            listing.refused[key] = Refusal(Reason.INVALID_SPEC, validation_message(exc))
            continue
        if server.spec.transport == "stdio" and server.metadata.namespace not in stdio_namespaces:
            log.warning("ignoring stdio MCPServer outside MCPEXEC_STDIO_SERVER_NAMESPACES", extra={"metadata": meta})
            message = (
                f"the gateway runs stdio MCP servers only from the namespaces its administrator trusts "
                f"(gateway.stdioServerNamespaces), and {server.metadata.namespace} is not one of them"
            )
            listing.refused[key] = Refusal(Reason.NOT_SERVED, message)
            continue
        listing.served[key] = server
    return listing


def servers_from_resources(items: list[dict[str, Any]], stdio_namespaces: frozenset[str]) -> dict[str, MCPServer]:
    """The MCPServer resources the gateway serves, by `namespace/name` (classify: the refused ones left out)."""
    return classify(items, stdio_namespaces).served


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
        self._refused: dict[str, Refusal] = {}
        self._generations: dict[str, int] = {}

    def specs(self) -> dict[str, MCPServerSpec]:
        return self._specs

    def headers(self, key: str) -> dict[str, str]:
        return self._headers.get(key, {})

    def status(self, key: str) -> dict[str, Any]:
        """The resource's status as last listed (or as this gateway last wrote it)."""
        return self._statuses.get(key, {})

    def remember_status(self, key: str, status: dict[str, Any]) -> None:
        self._statuses[key] = status

    def refused(self) -> dict[str, Refusal]:
        """The MCPServers the gateway does not serve, and why."""
        return self._refused

    def generation(self, key: str) -> int:
        """The server's metadata.generation as last listed (what its status describes)."""
        return self._generations.get(key, 1)

    def _load(self) -> tuple[Listing, dict[str, dict[str, str]], dict[str, dict[str, Any]], str]:
        items, resource_version = self._directory.mcp_servers()
        statuses = {f"{i['metadata']['namespace']}/{i['metadata']['name']}": i.get("status") or {} for i in items}
        listing = classify(items, self._stdio_namespaces)
        headers: dict[str, dict[str, str]] = {}
        for key, server in listing.served.items():
            resolved = {}
            for header in server.spec.headers_from_secrets:
                ref = header.secret_key_ref
                try:
                    resolved[header.name] = self._directory.secret_value(server.metadata.namespace, ref.name, ref.key)
                except (ApiException, KeyError):
                    log.warning("header secret missing", extra={"server": key, "secret": ref.name, "key": ref.key})
            headers[key] = resolved
        return listing, headers, statuses, resource_version

    async def refresh(self) -> None:
        listing, self._headers, self._statuses, self._resource_version = await asyncio.to_thread(self._load)
        self._specs = {key: server.spec for key, server in listing.served.items()}
        self._refused, self._generations = listing.refused, listing.generations

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
