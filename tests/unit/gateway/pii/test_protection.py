"""What a task's data is protected with: the gateway's floor, its servers' declarations and its own, all added up."""

from __future__ import annotations

from gateway.context import TaskContext
from gateway.pii.protection import combine, protection_for
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.pii import PiiDeclaration, PiiEntity, TaskPii
from mcpexec.api.sandbox import SandboxPolicy
from tests.support.tasks import make_task


def test_entities_patterns_and_phone_regions_only_add_up() -> None:
    server = PiiDeclaration.model_validate({"entities": ["IBAN"], "phoneRegions": ["JP"]})
    task = TaskPii.model_validate(
        {"phoneRegions": ["DE", "US"], "customPatterns": [{"name": "TICKET", "regex": "T-[0-9]+"}]}
    )
    protection = combine({PiiEntity.EMAIL}, [server, task], ["US", "GB"])
    assert protection.entities == {PiiEntity.EMAIL, PiiEntity.IBAN}
    assert protection.phone_regions == {"US", "GB", "JP", "DE"}
    assert [p.name for p in protection.patterns] == ["TICKET"]
    assert combine({PiiEntity.EMAIL}, [TaskPii()], ["US"]).phone_regions == {"US"}  # an empty list lowers nothing


def test_a_pooled_tasks_pool_template_adds_its_declarations() -> None:
    """The ceiling's pii (the pool's template) is one more level: it adds to the task's own, never lowers it."""
    task = make_task("pooled", ["crm"], pii={"entities": ["IBAN"]})
    ceiling = SandboxPolicy.model_validate(
        {
            "mcpServers": ["crm"],
            "pii": {"phoneRegions": ["JP"], "customPatterns": [{"name": "CASE", "regex": "C-\\d+"}]},
        }
    )
    crm = MCPServerSpec.model_validate({"transport": "stdio", "command": ["crm"], "pii": {"entities": ["US_SSN"]}})

    def servers(_ctx: TaskContext, name: str) -> MCPServerSpec | None:
        return crm if name == "crm" else None

    for_task = protection_for(frozenset({PiiEntity.EMAIL}), servers, frozenset({"US"}))
    alone = for_task(TaskContext(task=task, uid="u", expires_at=2**40))
    pooled = for_task(TaskContext(task=task, uid="u", expires_at=2**40, ceiling=ceiling))
    assert alone.entities == pooled.entities == {PiiEntity.EMAIL, PiiEntity.IBAN, PiiEntity.US_SSN}
    assert (alone.phone_regions, pooled.phone_regions) == ({"US"}, {"US", "JP"})
    assert ([p.name for p in alone.patterns], [p.name for p in pooled.patterns]) == ([], ["CASE"])
