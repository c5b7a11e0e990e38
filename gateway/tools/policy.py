"""A task's tool policy: its `mcpServers` list, then allow/deny globs over `server/tool` (deny wins).

Fail closed: a task that lists no servers sees no tools.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from mcpexec.api.agenttask import AgentTask


def server_visible(task: AgentTask, server: str) -> bool:
    return server in task.spec.mcp_servers


def tool_allowed(task: AgentTask, server: str, tool: str) -> bool:
    if not server_visible(task, server):
        return False
    qualified = f"{server}/{tool}"
    rules = task.spec.tools
    if any(fnmatchcase(qualified, pattern) for pattern in rules.deny):
        return False
    return not rules.allow or any(fnmatchcase(qualified, pattern) for pattern in rules.allow)
