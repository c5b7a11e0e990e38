"""`/v1/skills/*`: the seal a skill is saved with, and the check before a task runs one (docs/security.md)."""

from __future__ import annotations

from fastapi import APIRouter

from gateway.core import GatewayCore
from gateway.tools.skill_seals import Seal, SealedSkill, SkillCode
from gateway.web.auth import Caller
from gateway.web.error_responses import ERROR_RESPONSES


def router(core: GatewayCore) -> APIRouter:
    routes = APIRouter()

    @routes.post("/v1/skills/seal", responses=ERROR_RESPONSES)
    async def seal_skill(ctx: Caller, skill: SkillCode) -> Seal:
        """The seal a skill is saved with: the tools this task may call now, signed with the code (docs/security.md)."""
        return await core.skill_seals.seal(ctx, skill)

    @routes.post("/v1/skills/check", responses=ERROR_RESPONSES, status_code=204)
    async def check_skill(ctx: Caller, skill: SealedSkill) -> None:
        """204 if this task may run the skill's code: its seal is intact and its writer could call every tool this
        task can; 403 `skill_refused` otherwise."""
        await core.skill_seals.check(ctx, skill)

    return routes
