"""Skills carry the rights of the task that wrote them, and no more.

A skill is code one task saves and a later task runs with its own tool policy. A task allowed only
`crm/list_customers` could otherwise plant a skill that sends mail when a task allowed `crm/send_message` loads it
(a read-only skills volume does not help: the writer had it read-write). So the gateway seals each skill when it is
saved: an HMAC over the task's namespace, the skill's name, its code's digest and the tools the writing task could
call then. Loading asks the gateway to check the seal against the code about to run and refuses when the loading
task may call a tool the writer could not, or when the code, name or namespace changed since (a skills volume is
the sandbox's to write: a seal is the only part of it the sandbox cannot forge).
"""

from __future__ import annotations

import hashlib
import hmac
import json

from pydantic import BaseModel, Field

from gateway.context import TaskContext
from gateway.errors import SkillRefused
from gateway.tools.catalog import Catalog

MAX_SKILL_CODE = 200_000  # characters, as an AgentTask's own code


class SkillCode(BaseModel):
    name: str = Field(pattern=r"^[a-z_][a-z0-9_]{0,63}$")
    code: str = Field(max_length=MAX_SKILL_CODE)


class Seal(BaseModel):
    """What the runtime keeps beside a skill (`seal.json`): the writer's tools and the gateway's signature."""

    tools: list[str]
    signature: str = Field(pattern=r"^[0-9a-f]{64}$")


class SealedSkill(SkillCode):
    seal: Seal


class SkillSeals:
    def __init__(self, catalog: Catalog, key: bytes) -> None:
        self._catalog = catalog
        self._key = key

    async def _granted(self, ctx: TaskContext) -> list[str]:
        """Every `server/tool` the task may call now; a server that is not connected fails the request (503, to be
        retried), since its tools cannot be known."""
        granted = []
        for server in ctx.task.spec.mcp_servers:
            if self._catalog.spec(ctx, server) is not None:
                granted += [f"{server}/{tool.name}" for tool in await self._catalog.allowed_tools(ctx, server)]
        return sorted(granted)

    def _signature(self, ctx: TaskContext, skill: SkillCode, tools: list[str]) -> str:
        digest = hashlib.sha256(skill.code.encode("utf-8", "surrogatepass")).hexdigest()
        payload = {"namespace": ctx.task.metadata.namespace, "name": skill.name, "sha256": digest, "tools": tools}
        message = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    async def seal(self, ctx: TaskContext, skill: SkillCode) -> Seal:
        tools = await self._granted(ctx)
        return Seal(tools=tools, signature=self._signature(ctx, skill, tools))

    async def check(self, ctx: TaskContext, skill: SealedSkill) -> None:
        """Raises SkillRefused unless the seal is this gateway's, for this code, name and namespace, and the writer
        could call every tool the loading task can."""
        expected = self._signature(ctx, skill, skill.seal.tools)
        if not hmac.compare_digest(expected, skill.seal.signature):
            raise SkillRefused(
                f"skill {skill.name!r} does not match its seal: it was changed after it was saved, saved in another "
                "namespace or outside a task; save it again from a task"
            )
        beyond = sorted(set(await self._granted(ctx)) - set(skill.seal.tools))
        if beyond:
            shown = ", ".join(beyond[:10]) + (f" and {len(beyond) - 10} more" if len(beyond) > 10 else "")
            raise SkillRefused(
                f"skill {skill.name!r} was saved by a task that could not call {shown}, which this task can: running "
                "it here would give its code more rights than its writer had; save it again from a task with this "
                "task's tools"
            )
