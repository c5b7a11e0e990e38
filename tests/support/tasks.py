"""AgentTasks as the gateway tests register them: the unit tier's task contexts and the integration tier's tokens."""

from __future__ import annotations

from typing import Any

from mcpexec.api.agenttask import AgentTask, parse_agenttask


def make_task(
    name: str,
    servers: list[str],
    allow: list[str] | None = None,
    deny: list[str] | None = None,
    pii: dict[str, Any] | None = None,
    namespace: str = "default",
    model: str | None = None,
    approval: list[str] | None = None,
) -> AgentTask:
    spec: dict[str, Any] = {"mcpServers": servers, "tools": {"allow": allow or [], "deny": deny or []}}
    spec |= {"prompt": "test", "model": model} if model else {"code": "print('test')"}
    if pii is not None:
        spec["pii"] = pii
    if approval is not None:
        spec["approval"] = {"tools": approval}
    return parse_agenttask(
        {
            "apiVersion": "mcpexec.dev/v1alpha1",
            "kind": "AgentTask",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )
