"""Who asks for approval: the admin (by MCP annotations), the MCPServer owner, the pool template (the ceiling) and
the task; any one is enough, no one takes away another's ask; the answer is cached per tool and spec object."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from gateway.approvals.rules import ApprovalRules, asks
from gateway.context import TaskContext
from mcpexec.api.agentsession import session_task
from mcpexec.api.approval import AnnotationRule, annotations_ask
from mcpexec.api.egress import EgressPolicy
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.sandbox import SandboxPolicy
from tests.support.tasks import make_task

NONE: frozenset[AnnotationRule] = frozenset()
DESTRUCTIVE = frozenset({AnnotationRule.DESTRUCTIVE})
NOT_READ_ONLY = frozenset({AnnotationRule.NOT_READ_ONLY})


def _spec(approval: list[str] | None = None) -> MCPServerSpec:
    return MCPServerSpec.model_validate(
        {"transport": "stdio", "command": ["crm"], "approval": {"tools": approval or []}}
    )


def _tool(name: str, **hints: bool) -> types.Tool:
    annotations = types.ToolAnnotations(**hints) if hints else None
    return types.Tool(name=name, input_schema={"type": "object"}, annotations=annotations)


def _ctx(approval: list[str] | None = None, ceiling: list[str] | None = None) -> TaskContext:
    policy = (
        None
        if ceiling is None
        else SandboxPolicy.model_validate({"mcpServers": ["crm"], "approval": {"tools": ceiling}})
    )
    return TaskContext(task=make_task("t", ["crm"], approval=approval), uid="u", expires_at=2**40, ceiling=policy)


@pytest.mark.parametrize(
    ("read_only", "destructive", "destructive_asks", "not_read_only_asks"),
    [
        (None, None, True, True),  # says nothing: MCP's defaults, may write and destroy
        (True, None, False, False),
        (True, True, False, False),  # read-only wins: destructiveHint means nothing then
        (False, None, True, True),
        (False, False, False, True),  # writes, never destroys
        (None, False, False, True),
        (False, True, True, True),
    ],
)
def test_the_admins_rules_read_the_hints_as_mcp_defines_them(
    read_only: bool | None, destructive: bool | None, destructive_asks: bool, not_read_only_asks: bool
) -> None:
    assert annotations_ask(DESTRUCTIVE, read_only, destructive) is destructive_asks
    assert annotations_ask(NOT_READ_ONLY, read_only, destructive) is not_read_only_asks
    assert annotations_ask(NONE, read_only, destructive) is False


def test_each_level_asks_on_its_own_and_none_removes_anothers() -> None:
    send, get = (
        _tool("send_message", readOnlyHint=False, destructiveHint=False),
        _tool("get_customer", readOnlyHint=True),
    )
    assert not asks(_ctx(), "crm", send, _spec(), NONE)
    assert asks(_ctx(), "crm", send, _spec(), NOT_READ_ONLY)  # the admin
    assert not asks(_ctx(), "crm", send, _spec(), DESTRUCTIVE)
    assert asks(_ctx(), "crm", send, _spec(["send_*"]), NONE)  # the server's owner: globs over the tool's name
    assert asks(_ctx(ceiling=["crm/send_*"]), "crm", send, _spec(), NONE)  # the pool template
    assert asks(_ctx(["crm/*"]), "crm", send, _spec(), NONE)  # the task: globs over server/tool
    assert asks(_ctx(["crm/*"]), "crm", get, _spec(), NONE)
    # No level has a way to say "not this one": a task asking for nothing leaves every other ask standing.
    assert asks(_ctx([]), "crm", send, _spec(["send_*"]), NONE)
    assert asks(_ctx([], ceiling=[]), "crm", get, _spec(["get_*"]), NOT_READ_ONLY)
    assert not asks(_ctx(["mail/*"]), "crm", get, _spec(), NOT_READ_ONLY)


def test_a_sessions_approval_adds_to_its_pools() -> None:
    document: dict[str, Any] = {
        "apiVersion": "mcpexec.dev/v1alpha1",
        "kind": "AgentSession",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"poolRef": {"name": "p"}, "approval": {"tools": ["crm/send_*"]}},
    }
    assert session_task(document, ["crm"], EgressPolicy()).spec.approval.tools == ["crm/send_*"]


def test_the_answer_is_cached_until_the_tool_or_the_spec_is_another_object() -> None:
    rules = ApprovalRules(NONE)
    ctx, tool, open_spec = _ctx(), _tool("send_message"), _spec()
    assert not rules.asks(ctx, "crm", tool, open_spec)
    assert not rules.asks(ctx, "crm", tool, open_spec)
    assert rules.asks(ctx, "crm", tool, _spec(["send_*"]))  # the owner changed the MCPServer: read again
    rules.forget(ctx.scope)
    assert not rules.asks(ctx, "crm", tool, open_spec)
