"""A task's tool policy: its `mcpServers` list, then allow/deny globs over `server/tool` (deny wins); above it, the
MCPServer owner's `deniedTools`, which no task policy can allow; and for a task in a SandboxPool's sandbox, the
pool template's policy (the claim's ceiling): a server or tool is usable only if both allow it.

Fail closed: a task that lists no servers sees no tools.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from gateway.context import TaskContext
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.sandboxpool import within


def server_visible(ctx: TaskContext, server: str) -> bool:
    if server not in ctx.task.spec.mcp_servers:
        return False
    return ctx.ceiling is None or within(ctx.ceiling, server)


def tool_allowed(ctx: TaskContext, server: str, tool: str, spec: MCPServerSpec) -> bool:
    if not server_visible(ctx, server) or any(fnmatchcase(tool, pattern) for pattern in spec.denied_tools):
        return False
    if ctx.ceiling is not None and not within(ctx.ceiling, server, tool):
        return False
    qualified = f"{server}/{tool}"
    rules = ctx.task.spec.tools
    if any(fnmatchcase(qualified, pattern) for pattern in rules.deny):
        return False
    return not rules.allow or any(fnmatchcase(qualified, pattern) for pattern in rules.allow)
