"""Skill seals bind a skill's code to its name, its namespace and the gateway's key (the tools part runs against
real servers in tests/integration/runtime/test_skills.py)."""

from __future__ import annotations

import asyncio

import pytest

from gateway.context import TaskContext
from gateway.errors import SkillRefused
from gateway.tools.catalog import Catalog
from gateway.tools.skill_seals import SealedSkill, SkillCode, SkillSeals
from gateway.upstreams.pool import UpstreamPool
from tests.support.tasks import make_task


def _ctx(namespace: str) -> TaskContext:
    return TaskContext(task=make_task("skills", [], namespace=namespace), uid="u", expires_at=2**40)


def test_a_seal_holds_only_for_its_code_name_namespace_and_key() -> None:
    seals = SkillSeals(Catalog(UpstreamPool(dict, 1 << 20)), b"k" * 32)
    skill = SkillCode(name="report", code="def report():\n    return 1\n")
    seal = asyncio.run(seals.seal(_ctx("team-a"), skill))
    asyncio.run(seals.check(_ctx("team-a"), SealedSkill(name="report", code=skill.code, seal=seal)))
    forged = [
        (_ctx("team-b"), SealedSkill(name="report", code=skill.code, seal=seal)),
        (_ctx("team-a"), SealedSkill(name="other", code=skill.code, seal=seal)),
        (_ctx("team-a"), SealedSkill(name="report", code=skill.code + "x = 1\n", seal=seal)),
        (_ctx("team-a"), SealedSkill(name="report", code=skill.code, seal=seal.model_copy(update={"tools": ["a/b"]}))),
    ]
    for ctx, sealed in forged:
        with pytest.raises(SkillRefused, match="does not match its seal"):
            asyncio.run(seals.check(ctx, sealed))
    other_key = SkillSeals(Catalog(UpstreamPool(dict, 1 << 20)), b"j" * 32)
    with pytest.raises(SkillRefused):
        asyncio.run(other_key.check(_ctx("team-a"), SealedSkill(name="report", code=skill.code, seal=seal)))
