"""What one task's data is protected with: the union of what the cluster admin, the MCPServer owners, the task
author and (for a task in a SandboxPool's sandbox) the pool's template each set (docs/security.md): entities, custom
patterns, and the regions whose national phone formats are recognised. Every level only adds; none can lower what
another set."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gateway.context import TaskContext
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.pii import BUILTIN_ENTITIES, DEFAULT_PHONE_REGIONS, CustomPattern, PiiDeclaration, PiiEntity


@dataclass(frozen=True)
class Protection:
    """Hashable, so tasks with the same protection share their detectors."""

    entities: frozenset[PiiEntity]
    patterns: tuple[CustomPattern, ...]
    phone_regions: frozenset[str] = frozenset(DEFAULT_PHONE_REGIONS)


DEFAULT_MINIMUM: frozenset[PiiEntity] = frozenset(BUILTIN_ENTITIES)


def combine(
    minimum: Iterable[PiiEntity],
    declarations: Iterable[PiiDeclaration],
    phone_regions: Iterable[str] = DEFAULT_PHONE_REGIONS,
) -> Protection:
    entities, regions = set(minimum), set(phone_regions)
    patterns: dict[tuple[str, str], CustomPattern] = {}
    for declaration in declarations:
        entities.update(declaration.entities)
        regions.update(declaration.phone_regions)
        for pattern in declaration.custom_patterns:
            patterns.setdefault((pattern.name, pattern.regex), pattern)
    return Protection(frozenset(entities), tuple(patterns[key] for key in sorted(patterns)), frozenset(regions))


_REMEMBERED = 4096  # protections kept, one per task context: a cluster's replica serves a few hundred tasks at once


def protection_for(
    minimum: frozenset[PiiEntity],
    server_spec: Callable[[TaskContext, str], MCPServerSpec | None],
    phone_regions: frozenset[str] = frozenset(DEFAULT_PHONE_REGIONS),
) -> Callable[[TaskContext], Protection]:
    """The gateway's hook: the minimum, the declarations of every server the task lists (whether it is up or not:
    a server that is not known yet declares nothing, and its results cannot arrive either), the task's own, and
    its pool template's (the claim's ceiling).

    A task context keeps its protection for as long as its servers' specs are the same objects (a changed MCPServer
    is a new spec): combining them for every value was a measurable share of a cheap tool call."""
    remembered: dict[int, tuple[TaskContext, list[MCPServerSpec | None], Protection]] = {}

    def for_task(ctx: TaskContext) -> Protection:
        servers = [server_spec(ctx, name) for name in ctx.task.spec.mcp_servers]
        kept = remembered.get(id(ctx))
        if kept is not None and kept[0] is ctx and all(a is b for a, b in zip(kept[1], servers, strict=True)):
            return kept[2]
        declarations = [*(spec.pii for spec in servers if spec is not None), ctx.task.spec.pii]
        if ctx.ceiling is not None:
            declarations.append(ctx.ceiling.pii)
        protection = combine(minimum, declarations, phone_regions)
        if len(remembered) >= _REMEMBERED:
            remembered.clear()
        remembered[id(ctx)] = (ctx, servers, protection)
        return protection

    return for_task
