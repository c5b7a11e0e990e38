"""What a task's data is protected with: the gateway's floor, its servers' declarations and its own, all added up."""

from __future__ import annotations

from gateway.pii.protection import combine
from mcpexec.api.pii import PiiDeclaration, PiiEntity, TaskPii


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
