"""The tool policy a call is checked against: the task's own, the server owner's deniedTools, and for a task in a
SandboxPool's sandbox the pool template's (the ceiling): a tool is allowed only if every one of them allows it."""

from __future__ import annotations

from typing import Any

from gateway.context import TaskContext
from gateway.tools.policy import server_visible, tool_allowed
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.sandbox import SandboxPolicy
from tests.support.tasks import make_task

CRM = MCPServerSpec.model_validate({"transport": "stdio", "command": ["crm"], "deniedTools": ["drop_*"]})
TOOLS = ["list_customers", "get_customer", "send_message", "drop_table"]


def _ctx(servers: list[str], ceiling: dict[str, Any] | None = None, **policy: Any) -> TaskContext:
    task = make_task("t", servers, **policy)
    return TaskContext(
        task=task, uid="u", expires_at=2**40, ceiling=None if ceiling is None else SandboxPolicy.model_validate(ceiling)
    )


def _allowed(ctx: TaskContext, server: str = "crm") -> list[str]:
    return [tool for tool in TOOLS if tool_allowed(ctx, server, tool, CRM)]


def test_without_a_ceiling_the_tasks_policy_and_the_owners_deny_list_decide() -> None:
    assert _allowed(_ctx(["crm"])) == ["list_customers", "get_customer", "send_message"]
    assert _allowed(_ctx(["crm"], allow=["crm/get_*", "crm/drop_*"])) == ["get_customer"]
    assert _allowed(_ctx(["crm"], deny=["crm/send_*"])) == ["list_customers", "get_customer"]
    assert not server_visible(_ctx([]), "crm")


def test_a_ceiling_narrows_what_the_task_allows() -> None:
    ceiling = {"mcpServers": ["crm"], "tools": {"allow": ["crm/*_customer*"], "deny": ["crm/list_*"]}}
    assert _allowed(_ctx(["crm"], ceiling)) == ["get_customer"]
    assert _allowed(_ctx(["crm"], ceiling, allow=["crm/list_customers"])) == []


def test_a_task_wider_than_its_ceiling_gets_only_the_ceiling() -> None:
    ceiling = {"mcpServers": ["crm"], "tools": {"allow": ["crm/get_customer"]}}
    wide = _ctx(["crm", "mail"], ceiling, allow=["crm/*", "mail/*"])
    assert _allowed(wide) == ["get_customer"]
    assert server_visible(wide, "crm") and not server_visible(wide, "mail")
    assert _allowed(wide, "mail") == []


def test_an_empty_ceiling_allows_nothing() -> None:
    assert not server_visible(_ctx(["crm"], {}), "crm")
    assert _allowed(_ctx(["crm"], {})) == []
