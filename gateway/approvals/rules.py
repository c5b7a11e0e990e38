"""Which calls need a person's approval. Protection only adds up: the admin's annotation rules, the MCPServer
owner's `spec.approval.tools`, the pool template's (the claim's ceiling) and the task's or session's own; any one
asking is enough, none can take away another's.

The answer is cached per task, tool definition and server spec (both replaced, never changed in place, when the
catalog or the MCPServers are read again): a call that needs no approval pays a dict lookup, nothing more.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import mcp_types as types

from gateway.context import TaskContext
from mcpexec.api.approval import AnnotationRule, annotations_ask
from mcpexec.api.mcpserver import MCPServerSpec


def asks(
    ctx: TaskContext, server: str, tool: types.Tool, spec: MCPServerSpec, admin: frozenset[AnnotationRule]
) -> bool:
    """Whether anyone with a say asks for approval of `server/tool.name` for this task."""
    hints = tool.annotations
    if admin and annotations_ask(
        admin, None if hints is None else hints.read_only_hint, None if hints is None else hints.destructive_hint
    ):
        return True
    if any(fnmatchcase(tool.name, pattern) for pattern in spec.approval.tools):
        return True
    qualified = f"{server}/{tool.name}"
    ceiling = [] if ctx.ceiling is None else ctx.ceiling.approval.tools
    return any(fnmatchcase(qualified, pattern) for pattern in [*ceiling, *ctx.task.spec.approval.tools])


class ApprovalRules:
    """`asks`, cached per (task scope, server, tool) for as long as the tool's definition and the server's spec are
    the same objects."""

    def __init__(self, admin: frozenset[AnnotationRule]) -> None:
        self._admin = admin
        self._answers: dict[str, dict[tuple[str, str], tuple[types.Tool, MCPServerSpec, bool]]] = {}

    def asks(self, ctx: TaskContext, server: str, tool: types.Tool, spec: MCPServerSpec) -> bool:
        answers = self._answers.setdefault(ctx.scope, {})
        cached = answers.get((server, tool.name))
        if cached is None or cached[0] is not tool or cached[1] is not spec:
            cached = answers[(server, tool.name)] = (tool, spec, asks(ctx, server, tool, spec, self._admin))
        return cached[2]

    def forget(self, scope: str) -> None:
        """Drop a task's answers (its per-task state is being dropped)."""
        self._answers.pop(scope, None)
