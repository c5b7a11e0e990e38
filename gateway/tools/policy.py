"""A task's tool policy: its `mcpServers` list, then allow/deny globs over `server/tool` (deny wins); above it, the
MCPServer owner's `deniedTools`, which no task policy can allow.

Fail closed: a task that lists no servers sees no tools.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from mcpexec.api.agenttask import AgentTask
from mcpexec.api.mcpserver import MCPServerSpec


def server_visible(task: AgentTask, server: str) -> bool:
    return server in task.spec.mcp_servers


def tool_allowed(task: AgentTask, server: str, tool: str, spec: MCPServerSpec) -> bool:
    if not server_visible(task, server) or any(fnmatchcase(tool, pattern) for pattern in spec.denied_tools):
        return False
    qualified = f"{server}/{tool}"
    rules = task.spec.tools
    if any(fnmatchcase(qualified, pattern) for pattern in rules.deny):
        return False
    return not rules.allow or any(fnmatchcase(qualified, pattern) for pattern in rules.allow)
